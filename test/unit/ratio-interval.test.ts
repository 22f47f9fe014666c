// The speedup of one set of repetitions over another (issue 38): the ratio of the medians shown beside each
// side, with the Mann-Whitney interval of the ratios, whose level is exact and named where it is below 95%.
import { describe, expect, it } from 'vitest';

import { seededRandom } from '../../src-main/core/stats/medians';
import { decideOnRepetitions } from '../../src-main/core/stats/decision';
import { ratioInterval } from '../../src-main/core/stats/ratio-interval';

/** P(U <= u) by listing every way to place n candidate ranks among n + m: the exact count to check against. */
function bruteCdf(n: number, m: number, u: number): number {
  let hits = 0;
  let total = 0;
  const walk = (i: number, left: number, candidatesSoFar: number, U: number) => {
    if (i === n + m) {
      if (left === 0) {
        total++;
        if (U <= u) hits++;
      }
      return;
    }
    // A candidate at position i, or a baseline value: that one is above every candidate placed before it (U counts those pairs).
    if (left > 0) walk(i + 1, left - 1, candidatesSoFar + 1, U);
    if (n + m - i > left) walk(i + 1, left, candidatesSoFar, U + candidatesSoFar);
  };
  walk(0, n, 0, 0);
  return hits / total;
}

const normal = (random: () => number) => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());

describe('ratioInterval', () => {
  it('over 3 + 3 repetitions is [min, max] of the 9 ratios and says it covers 90%', () => {
    const s = ratioInterval([100, 110, 90], [120, 130, 125]);
    expect(s.median).toBeCloseTo(125 / 100, 12);
    expect(s.low).toBeCloseTo(120 / 110, 12);
    expect(s.high).toBeCloseTo(130 / 90, 12);
    expect(s.coverage).toBeCloseTo(1 - 2 / 20, 12); // P(U = 0) = 1 / C(6, 3)
  });

  it('over 5 + 5 leaves the 2 most extreme ratios out at each end and reaches 95% (96.8%), naming no lower level', () => {
    const base = [100, 101, 102, 103, 104];
    const cand = [110, 111, 112, 113, 114];
    const ratios = cand.flatMap((c) => base.map((b) => c / b)).sort((x, y) => x - y);
    expect(ratioInterval(base, cand)).toEqual({ low: ratios[2], median: 112 / 102, high: ratios[22] });
  });

  it('uses the exact distribution of U: its level over 4 + 3 matches a count of every arrangement', () => {
    // 4 + 3: P(U <= 0) = 1/35, so [min, max] covers 1 - 2/35; P(U <= 1) = 2/35, the next one in covers 1 - 4/35 (88.6%).
    expect(bruteCdf(4, 3, 0)).toBeCloseTo(1 / 35, 12);
    expect(bruteCdf(4, 3, 1)).toBeCloseTo(2 / 35, 12);
    const s = ratioInterval([10, 11, 12], [20, 21, 22, 23]);
    expect(s.coverage).toBeCloseTo(1 - 2 / 35, 12); // 94.3%: no interval of 4 + 3 reaches 95%, so the widest, named
    expect([s.low, s.high]).toEqual([20 / 12, 23 / 10]);
  });

  it('holds its level under a multiplicative change, simulated: 4 + 4 repetitions cover the true ratio at least 95% of the time', () => {
    const random = seededRandom(3);
    let held = 0;
    const runs = 2000;
    for (let t = 0; t < runs; t++) {
      const base = Array.from({ length: 4 }, () => 1000 * Math.exp(0.05 * normal(random)));
      const cand = Array.from({ length: 4 }, () => 1200 * Math.exp(0.05 * normal(random)));
      const s = ratioInterval(base, cand);
      if (s.low <= 1.2 && 1.2 <= s.high) held++;
    }
    expect(held / runs).toBeGreaterThan(0.955); // exact: 1 - 2/70 = 97.1%
  });

  it('takes U as normal for large sets, and still brackets the ratio', () => {
    const random = seededRandom(5);
    const base = Array.from({ length: 120 }, () => 1000 * Math.exp(0.05 * normal(random)));
    const cand = Array.from({ length: 120 }, () => 1100 * Math.exp(0.05 * normal(random)));
    const s = ratioInterval(base, cand);
    expect(s.coverage).toBeUndefined();
    expect(s.low).toBeLessThan(1.1);
    expect(s.high).toBeGreaterThan(1.1);
    expect(s.high - s.low).toBeLessThan(0.03); // 120 + 120 repetitions at 5% noise: a tight interval
  });

  it('refuses a throughput that is not positive, naming it', () => {
    expect(() => ratioInterval([100, 0], [120, 130])).toThrow('ratioInterval baseline: measurement 0 is not a positive finite number');
    expect(() => ratioInterval([100, 110], [NaN])).toThrow('ratioInterval candidate: measurement NaN is not a positive finite number');
    expect(() => ratioInterval([], [1])).toThrow('ratioInterval baseline: no measurements');
  });

  it('decides an ADR attempt as a wizard trial is decided: on 3 + 2 repetitions (80%) a clear gain only leans', () => {
    const few = decideOnRepetitions(ratioInterval([100, 101, 99], [140, 141]), 0.01);
    expect(few.decision).toBe('inconclusive');
    expect(few.why).toMatch(/^leaning faster: speedup 1\.40\dx, 80\.0% CI 1\.38\dx?–1\.42\d: the whole interval is above 1 .*; a change is accepted or rejected only on an interval of 90% or more \(3 repetitions or more of each\)$/);
    expect(decideOnRepetitions(ratioInterval([100, 101, 99], [140, 141, 139]), 0.01)).toMatchObject({ decision: 'accept', why: expect.stringContaining('90.0% CI') });
  });
});
