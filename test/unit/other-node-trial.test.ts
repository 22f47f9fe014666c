// Issue 40: a launch that this node stopped after another node's part failed. The job's teardown failing on one node
// (torchrun's exit barrier once node 0's store closed, seen on the busy CI machine) does not undo what every rank
// measured; a failure before every rank reached the step limit is the launch's error, naming the node.
import { describe, expect, it } from 'vitest';

import type { ScriptTarget } from '../../src-main/api/script-target';
import type { TrialRecord } from '../../src-main/core/script/measured-launch';
import { trialError } from '../../src-main/core/script/measured-launch';
import type { ProbeConnection } from '../../src-main/core/script/probe-channel';

const target = { command: ['torchrun', 'train.py'], cwd: '.', env: {} } as unknown as ScriptTarget;
const FAILED = "node b's part of the job exited with code 1";

function rank(rank: number, done: boolean): ProbeConnection {
  const step = (n: number) => ({ type: 'step', step: n, durMs: 5, samples: 32, batches: 1, dataMs: 0, phasesMs: { forward: 1, loss: 0, backward: 2, optimizer: 1 }, timing: 'host' });
  const messages = [step(1), step(2), ...(done ? [{ type: 'done', reason: 'steps', steps: 2, memory: { device: 'cpu', cudaPeakBytes: null, cudaTotalBytes: null } }] : [])];
  return { hello: { type: 'hello', token: 't', pid: 1, rank, localRank: 0, worldSize: 2, python: '3.11' }, messages } as unknown as ProbeConnection;
}

function record(connections: ProbeConnection[], otherNode: TrialRecord['otherNode'], cancelled = true): TrialRecord {
  return {
    outcome: { exitCode: cancelled ? null : 0, signal: cancelled ? 'SIGTERM' : null, timedOut: false, cancelled, leftover: false, startError: null },
    connections, rejectedLines: 0, channelProblems: [], stderrTail: '', stdoutTail: '', seconds: 20, otherNode,
  };
}

describe('a launch stopped after another node failed', () => {
  it('keeps the measurement when every rank of the job reached the step limit', () => {
    expect(trialError(record([rank(0, true), rank(1, true)], { failed: FAILED, stoppedHere: true }), { target, overrides: {}, timeoutMs: 150_000 })).toBeNull();
  });

  it('is an error naming the node when a rank had not, or had never reported', () => {
    for (const ranks of [[rank(0, true), rank(1, false)], [rank(0, true)]]) {
      const err = trialError(record(ranks, { failed: FAILED, stoppedHere: true }), { target, overrides: {}, timeoutMs: 150_000 });
      expect(err?.code).toBe('E_SCRIPT');
      expect(err?.message).toBe(`${FAILED}, after 2 optimizer step(s) here: the job cannot finish without it, so this node's part was stopped 10 s later`);
    }
  });

  it("is still the person's cancel when they cancelled, whatever another node said", () => {
    const err = trialError(record([rank(0, true), rank(1, true)], { failed: FAILED, stoppedHere: false }), { target, overrides: {}, timeoutMs: 150_000 });
    expect(err?.code).toBe('E_CANCELLED');
  });
});
