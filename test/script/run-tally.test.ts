// The running sums a script run keeps per rank (no Python needed): a million steps hold the same memory as ten.
import { describe, expect, it } from 'vitest';

import type { ProbeConnection } from '../../src-main/core/script/probe-channel';
import type { ProbeMessage, ProbeStep } from '../../src-main/core/script/probe-messages';
import { LossTally, rankCollectives, RankTally } from '../../src-main/core/script/rank-stats';

const step = (n: number, samples: number, more: Partial<ProbeStep> = {}): ProbeStep => ({
  type: 'step',
  step: n,
  durMs: 10,
  samples,
  batches: 1,
  dataMs: 2,
  phasesMs: { forward: 3, loss: 1, backward: 3, optimizer: 1 },
  timing: 'host-clock',
  ...more,
});

describe('RankTally', () => {
  it('sums the steps after the warm-up and names the commonest batch, not the short last one', () => {
    const t = new RankTally(0, 2);
    for (let i = 1; i <= 9; i++) t.step(step(i, 64));
    t.step(step(10, 16));
    expect(t.steps).toBe(10);
    expect(t.batchSize).toBe(64);
    expect(t.measured.n).toBe(8);
    expect(t.measured.samples).toBe(7 * 64 + 16);
    expect(t.measured.phasesMs).toEqual({ forward: 24, loss: 8, backward: 24, optimizer: 8 });
    expect(t.allMs).toBe(100);
  });

  it('adds CUDA-event phases that arrive after their step, and reports each window once', () => {
    const t = new RankTally(0, 0);
    t.step(step(1, 32, { timing: 'cuda-events', phasesMs: { forward: 0, loss: 0, backward: 0, optimizer: 0 } }));
    t.phases({ type: 'phases', step: 1, phasesMs: { forward: 4, loss: 1, backward: 2, optimizer: 1 }, timing: 'cuda-events' });
    expect(t.timing).toBe('cuda-events');
    expect(t.measured.phasesMs).toEqual({ forward: 4, loss: 1, backward: 2, optimizer: 1 });
    expect(t.takeWindow()).toEqual({ samplesPerSec: 3200, dataWaitPercent: 20 });
    expect(t.takeWindow()).toEqual({ samplesPerSec: null, dataWaitPercent: null });
  });
});

describe('LossTally', () => {
  it('averages the finite losses since the last point and keeps the last finite one', () => {
    const l = new LossTally();
    l.add([1, 2, 3], [2, null, 4]);
    expect(l.pending()).toBe(true);
    expect(l.take()).toEqual({ loss: 3, lossStep: 3 });
    expect(l.take()).toEqual({ loss: null, lossStep: null });
    l.add([4], [null]);
    expect(l.last).toEqual({ step: 3, value: 4 });
    expect(l.pending()).toBe(false);
  });
});

describe('rankCollectives on one machine', () => {
  // Two ranks of one torchrun agent: rank 1 arrives 1 ms after rank 0 each step and the all-reduce ends 0.5 ms later.
  // Rank 1's own clock estimate is 3 ms off (a loaded machine); both share one wall clock, so the best estimate holds.
  const rank = (r: number, nodeRank: number, offsetMs: number, uncertaintyMs: number): ProbeConnection => {
    const messages: ProbeMessage[] = [{ type: 'clockOffset', at: 'start', offsetMs, uncertaintyMs, probes: 8 }];
    for (let n = 1; n <= 6; n++) {
      const t = 1_000 + 10 * n;
      messages.push(step(n, 32));
      messages.push({ type: 'collectives', step: n, items: [{ index: 0, op: 'allreduce', arriveMs: t + r, doneMs: t + 1.5, bytes: 4096, count: 1 }] });
    }
    return { hello: { type: 'hello', token: 't', pid: 10 + r, rank: r, localRank: r, worldSize: 2, python: '3.11', node: 'rig', nodeRank }, messages };
  };

  it("shares the node's best clock estimate, so the exposed wait after the last arrival survives one rank's bad one", () => {
    const c = rankCollectives([rank(0, 0, 0, 0.1), rank(1, 0, 3, 2)], 1, undefined)!;
    expect(c.exposedShare).toBeCloseTo(0.5 / 10, 6);
    expect(c.clocks.map((k) => k.offsetMs)).toEqual([0, 0]);
  });

  it("gives no verdict when only one rank's collectives came (the others sent none)", () => {
    const silent = { ...rank(1, 0, 0, 0.1), messages: rank(1, 0, 0, 0.1).messages.filter((m) => m.type !== 'collectives') };
    expect(rankCollectives([rank(0, 0, 0, 0.1), silent], 1, undefined)).toBeNull();
  });

  it('keeps each node its own estimate: ranks of other node ranks are other machines', () => {
    const c = rankCollectives([rank(0, 0, 0, 0.1), rank(1, 1, 3, 2)], 1, undefined)!;
    expect(c.clocks.map((k) => k.offsetMs)).toEqual([0, 3]);
    // The exposed wait is the last rank's own, on its own clock: no offset, good or bad, moves it.
    expect(c.exposedShare).toBeCloseTo(0.5 / 10, 6);
  });

  it('a rank stamped after the all-reduce had ended elsewhere still shows its own wait, not 0', () => {
    // Seen on a loaded 2-core machine: rank 1 handed in its gradients, was descheduled, and stamped its arrival
    // after rank 0's all-reduce had completed; the others' completion minus that arrival was below 0 every step.
    const late = (r: number): ProbeConnection => {
      const messages: ProbeMessage[] = [];
      for (let n = 1; n <= 6; n++) {
        const t = 1_000 + 10 * n;
        messages.push(step(n, 32));
        const item = r === 0 ? { arriveMs: t, doneMs: t + 1.8 } : { arriveMs: t + 4.7, doneMs: t + 4.9 };
        messages.push({ type: 'collectives', step: n, items: [{ index: 0, op: 'allreduce', ...item, bytes: 4096, count: 1 }] });
      }
      return { hello: { type: 'hello', token: 't', pid: 10 + r, rank: r, localRank: r, worldSize: 2, python: '3.11', node: 'rig', nodeRank: 0 }, messages };
    };
    const c = rankCollectives([late(0), late(1)], 1, undefined)!;
    expect(c.exposedShare).toBeCloseTo(0.2 / 10, 6);
    // Bytes over that sliver would be a bandwidth no link has: stamps that disagree give none.
    expect(c.busBytesPerSec).toBeNull();
  });
});
