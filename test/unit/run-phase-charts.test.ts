import { describe, expect, it } from 'vitest';

import { phaseBarsOption, phaseTotalMs, trainPhasesOver, wholePercents } from '../../src-main/api/charts/run-charts';

type Option = { title: { text: string; subtext?: string }; yAxis: { data: string[] }; series: { data: number[] }[] };

// A benchmark's record (phasesMs of a measured CPU benchmark): the named phases and `other`, its steady step less them.
const benchmark = { data: 0.21, h2d: 0, forward: 0.74, loss: 0.05, backward: 1.12, optimizer: 0.35, other: 0.02 };
// An engine training run's record: named phases only, means over every step.
const training = { data: 0.3, h2d: 0, forward: 0.8, loss: 0.06, backward: 1.2, optimizer: 0.21 };

describe('the phase chart adds up to the step beside it (issue 38)', () => {
  it("a benchmark's bars include 'other', so their total is its steady step (2.49 ms), not the named phases' 2.47", () => {
    const option = phaseBarsOption(benchmark, 'mean of the measured steps') as unknown as Option;
    expect(option.yAxis.data.map((l) => l.split(' ')[0])).toEqual(['data', 'h2d', 'forward', 'loss', 'backward', 'optimizer', 'other']);
    expect(option.series[0].data.at(-1)).toBe(0.02);
    expect(phaseTotalMs(benchmark)).toBeCloseTo(2.49, 10);
    expect(option.title.text).toBe('Time per step by phase: 2.49 ms in all');
    expect(option.title.subtext).toBe('mean of the measured steps');
  });

  it("a record without 'other' draws the named phases alone", () => {
    const option = phaseBarsOption(training, trainPhasesOver('engine')) as unknown as Option;
    expect(option.yAxis.data).toHaveLength(6);
    expect(phaseTotalMs(training)).toBeCloseTo(2.57, 10);
    // The wall-clock mean beside it includes evaluation: the chart says it does not.
    // The total first, what it is a mean of on its own line: at 1440 px the one long line was cut before the total.
    expect(option.title.text).toBe('Time per step by phase: 2.57 ms in all');
    expect(option.title.subtext).toBe('mean of every step, warm-up included, evaluation not');
  });
});

describe("the phase bars' shares", () => {
  it('add up to 100% (rounded one by one, 3 + 25 + 43 + 28 read as 99%)', () => {
    const shares = wholePercents([0.098, 0, 0.754, 0.004, 1.276, 0.837, 0.0]);
    expect(shares.reduce((a, b) => a + b, 0)).toBe(100);
    expect(shares).toEqual([3, 0, 26, 0, 43, 28, 0]);
    expect(wholePercents([0, 0])).toEqual([0, 0]);
  });
});
