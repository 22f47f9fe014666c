// Issue 27 item 9, progress on every wait: the status line above a script's output (warm-up, measured step x
// of N, the probe's stop that is not a crash, a crash that still is one), in a benchmark, a run and a batch search.
import { describe, expect, it } from 'vitest';

import type { BenchmarkProgress } from '../../src-main/api/benchmark';
import { scriptBatchStatus, scriptBenchmarkStatus, scriptRunStatus } from '../../src-renderer/view-models/script-status';

const script = (p: Partial<BenchmarkProgress>): BenchmarkProgress => ({
  jobId: 'j', target: 'script', runId: 'r', phase: 'measuring', repetition: 1, repetitions: 1, step: 1, totalSteps: 24, warmupSteps: 4, steps: 20, samplesPerSec: null, ...p,
});

describe('the status line of a script benchmark', () => {
  it('counts the warm-up, then the measured steps of N', () => {
    expect(scriptBenchmarkStatus(null, null)).toEqual({ text: 'starting the command…', tone: 'live' });
    expect(scriptBenchmarkStatus(script({ phase: 'warmup', step: 3 }), null)?.text).toBe('warming up: step 3 of 4 (not measured)');
    expect(scriptBenchmarkStatus(script({ phase: 'measuring', step: 9 }), null)?.text).toBe('measuring step 5 of 20');
    expect(scriptBenchmarkStatus(script({ phase: 'measuring', step: 9, steps: null }), null)?.text).toBe('measuring step 5 (until the script ends on its own)');
    expect(scriptBenchmarkStatus(script({ phase: 'warmup', step: 2, repetition: 2, repetitions: 3 }), null)?.text).toBe('launch 2 of 3: warming up: step 2 of 4 (not measured)');
  });

  it('names the ranks heard so far in a job of several, each with its node, or counts them when there are many', () => {
    const two = [{ rank: 0, node: 'rig-a', nodeRank: 0, step: 9 }, { rank: 1, node: 'rig-b', nodeRank: 1, step: 1 }];
    expect(scriptBenchmarkStatus(script({ phase: 'measuring', step: 9, ranks: two }), null)?.text).toBe('measuring step 5 of 20; ranks heard: 0 (node 0, rig-a) at step 9, 1 (node 1, rig-b) at step 1');
    expect(scriptBenchmarkStatus(script({ phase: 'warmup', step: 2, ranks: [{ rank: 0, node: null, nodeRank: null, step: 2 }, { rank: 1, node: null, nodeRank: null, step: 2 }] }), null)?.text).toBe(
      'warming up: step 2 of 4 (not measured); ranks heard: 0 at step 2, 1 at step 2',
    );
    const many = Array.from({ length: 16 }, (_, r) => ({ rank: r, node: r < 8 ? 'rig-a' : 'rig-b', nodeRank: r < 8 ? 0 : 1, step: 10 + (r % 3) }));
    expect(scriptBenchmarkStatus(script({ phase: 'measuring', step: 12, ranks: many }), null)?.text).toBe('measuring step 8 of 20; 16 ranks heard on 2 nodes, at steps 10-12');
    // One rank says nothing of ranks.
    expect(scriptBenchmarkStatus(script({ phase: 'measuring', step: 9, ranks: [two[0]] }), null)?.text).toBe('measuring step 5 of 20');
  });

  it("says the probe's stop is one, not a crash, and a crash still reads as a crash", () => {
    const stopping = scriptBenchmarkStatus(script({ phase: 'stopping', step: 24 }), null);
    expect(stopping).toEqual({ text: 'stopping the script after the 20 measured steps (24 optimizer steps with the warm-up), as asked: not a crash', tone: 'done' });
    const crashed = scriptBenchmarkStatus(script({ phase: 'measuring', step: 7 }), { ok: false, code: 'E_SCRIPT', message: 'the script exited with code 1 after 7 optimizer step(s); its last lines:\nTraceback' });
    expect(crashed).toEqual({ text: 'the launch failed: the script exited with code 1 after 7 optimizer step(s)', tone: 'error' });
    expect(scriptBenchmarkStatus(script({ phase: 'measuring', step: 7 }), { ok: false, code: 'E_CANCELLED', message: 'x' })?.tone).toBe('done');
    expect(scriptBenchmarkStatus(script({ phase: 'repetition-done', step: 24, repetitions: 2, repetition: 2, samplesPerSec: 1234.4 }), { ok: true })?.text).toBe(
      'finished: 2 launches measured, each stopped by Trainbench after its 20 measured steps, as asked',
    );
  });

  it('of a whole script run: the step of its limit, and the stop at the limit', () => {
    expect(scriptRunStatus({ step: 24, maxSteps: 938 }).text).toBe('training: step 24 of 938');
    expect(scriptRunStatus({ step: 24, maxSteps: null }).text).toBe('training: step 24 (until the script ends on its own)');
    expect(scriptRunStatus({ step: 938, maxSteps: 938 })).toEqual({ text: 'stopping the script at its step limit, after 938 steps, as asked: not a crash', tone: 'done' });
  });
});

describe('the status line of a script batch-size search', () => {
  const trial = (index: number, batchSize: number, outcome: 'ok' | 'E_OOM' | 'crash') => ({ index, batchSize, outcome, samplesPerSec: outcome === 'ok' ? 1500.2 : null });
  it("says each trial's launch was stopped on purpose, and an OOM is a data point", () => {
    expect(scriptBatchStatus([], null).text).toBe('trial 1: starting the command with the first batch size…');
    expect(scriptBatchStatus([trial(0, 64, 'ok')], null).text).toBe(
      'trial 1, batch 64: trained at 1,500 samples/s, stopped by Trainbench after its measured steps, as asked; the next trial is starting…',
    );
    expect(scriptBatchStatus([trial(0, 64, 'ok'), trial(1, 4096, 'E_OOM')], null).text).toBe(
      'trial 2, batch 4,096: out of memory (a data point of the search, not a failure); the next trial is starting…',
    );
    expect(scriptBatchStatus([trial(0, 64, 'ok'), trial(1, 128, 'ok')], { ok: true })).toEqual({
      text: "finished: 2 trials; Trainbench ends each trial's launch after its measured steps, so its output stops mid-epoch",
      tone: 'done',
    });
    expect(scriptBatchStatus([trial(0, 64, 'ok')], { ok: false, code: 'E_SCRIPT', message: 'the script exited with code 2 after 0 optimizer step(s)' })).toEqual({
      text: 'the search failed: the script exited with code 2 after 0 optimizer step(s)',
      tone: 'error',
    });
  });
});
