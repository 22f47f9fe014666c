import { describe, expect, it } from 'vitest';

import { median, medianInterval, quantile, relativeHalfWidth, seededRandom } from '../../src-main/core/stats/medians';
import { ratioInterval } from '../../src-main/core/stats/ratio-interval';
import { decide } from '../../src-main/core/stats/decision';

/** Throughputs of k repetitions with a given relative noise (normal, Box-Muller) and a linear drift. */
function simulate(random: () => number, mean: number, k: number, cv: number, drift = 0): number[] {
  return Array.from({ length: k }, (_, i) => {
    const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    return mean * (1 + cv * z) * (1 + drift * i);
  });
}

/** The wizard's protocol for one change: baseline and candidate interleaved, k each, then the decision. */
function trial(seed: number, trueSpeedup: number, k = 5, cv = 0.03) {
  const random = seededRandom(seed);
  const base = simulate(random, 1000, k, cv);
  const cand = simulate(random, 1000 * trueSpeedup, k, cv);
  const noise = relativeHalfWidth(medianInterval(base));
  return decide(ratioInterval(base, cand), noise);
}

describe('statistics of repeated measurements', () => {
  it('computes medians and quantiles', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(quantile([0, 10], 0.25)).toBe(2.5);
  });

  it('refuses empty or non-finite measurements, naming the value', () => {
    expect(() => median([])).toThrow('no measurements');
    expect(() => medianInterval([1, NaN])).toThrow('NaN is not a finite number');
    expect(() => ratioInterval([1, 2], [Infinity])).toThrow('Infinity');
  });

  it('brackets the median with its order statistics', () => {
    const xs = [980, 1010, 995, 1003, 1020, 990, 1001];
    const a = medianInterval(xs);
    expect(a).toEqual({ low: 980, median: 1001, high: 1020 }); // 7 values: [min, max] is the widest, 98.4%
    expect(a.low).toBeLessThanOrEqual(a.median);
    expect(a.high).toBeGreaterThanOrEqual(a.median);
    expect(a.median).toBe(1001);
  });

  it('says what an interval over few repetitions covers, and holds 95% from 6 on (issue 38)', () => {
    expect(medianInterval([1010, 990, 1000])).toEqual({ low: 990, median: 1000, high: 1010, coverage: 0.75 });
    expect(medianInterval([5, 1, 4, 2, 3]).coverage).toBe(0.9375);
    const twelve = Array.from({ length: 12 }, (_, i) => 100 + i);
    expect(medianInterval(twelve)).toEqual({ low: 102, median: 105.5, high: 109 }); // j = 3: 96.1%, no coverage below 95% to name
    // Simulated: the interval holds the true median at least 95% of the time over 7 values, where the percentile bootstrap held 86%.
    const random = seededRandom(11);
    let held = 0;
    for (let t = 0; t < 2000; t++) {
      const i = medianInterval(simulate(random, 1000, 7, 0.05));
      if (i.low <= 1000 && 1000 <= i.high) held++;
    }
    expect(held / 2000).toBeGreaterThan(0.97); // [min, max] of 7 covers 98.4%
  });

  it('accepts a true 10% gain, rejects a 10% loss', () => {
    let accepted = 0;
    let rejected = 0;
    for (let seed = 1; seed <= 200; seed++) {
      if (trial(seed, 1.1).decision === 'accept') accepted++;
      if (trial(seed + 1000, 0.9).decision === 'reject') rejected++;
    }
    // With 3% noise and 5 repetitions a 10% change is clear in ~96% of runs (measured over 400 seeds).
    expect(accepted).toBeGreaterThanOrEqual(180);
    expect(rejected).toBeGreaterThanOrEqual(180);
  });

  it('accepts a change that does nothing in at most 5% of 200 seeded simulations', () => {
    let accepted = 0;
    const decisions = new Set<string>();
    for (let seed = 1; seed <= 200; seed++) {
      const d = trial(seed, 1.0);
      decisions.add(d.decision);
      if (d.decision === 'accept') accepted++;
    }
    expect(accepted / 200).toBeLessThanOrEqual(0.05);
    expect(decisions.has('inconclusive')).toBe(true);
  });

  it('says why, with the interval and the noise floor', () => {
    expect(decide({ low: 1.05, median: 1.1, high: 1.15 }, 0.02)).toMatchObject({ decision: 'accept', why: expect.stringContaining('exceeds the noise floor (2.0%)') });
    expect(decide({ low: 1.005, median: 1.01, high: 1.02 }, 0.03)).toMatchObject({ decision: 'inconclusive', why: expect.stringContaining('within the noise floor') });
    expect(decide({ low: 0.97, median: 1.01, high: 1.04 }, 0.01)).toMatchObject({ decision: 'inconclusive', why: expect.stringContaining('contains 1') });
    expect(decide({ low: 0.8, median: 0.85, high: 0.9 }, 0.01)).toMatchObject({ decision: 'reject' });
  });
});
