// The running sums a script run keeps per rank (no Python needed): a million steps hold the same memory as ten.
import { describe, expect, it } from 'vitest';

import type { ProbeStep } from '../../src-main/core/script/probe-messages';
import { LossTally, RankTally } from '../../src-main/core/script/rank-stats';

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
