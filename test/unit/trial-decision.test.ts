// Issue 12: the wizard's keep/drop rule on synthetic measurements, seeded so every run sees the same numbers.
// K pairs of best/candidate repetitions (the wizard's default is 5).
import { describe, expect, it } from 'vitest';

import { seededRandom } from '../../src-main/core/stats/medians';
import { orderIntervalCoverage, pairsAllow, pairsToDecide } from '../../src-main/api/order-interval';
import { trialDecisionWords } from '../../src-main/api/charts/optimise-charts';
import { decideTrial, medianOrderInterval, noiseFloor, pairedSpeedup, relativeLossDelta } from '../../src-main/core/optimise/trial-decision';
import { meanLoss } from '../../src-main/core/stats/benchmark-summary';
import { pairedSpeedupText } from '../../src-main/core/reports/section-wizard';


function normal(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

/**
 * One trial as the wizard runs it: a baseline of K repetitions for the noise floor, then K pairs
 * best/candidate interleaved (A/B/A/B) on a machine whose speed drifts by `drift` per repetition.
 */
function simulate(seed: number, trueSpeedup: number, cv = 0.03, drift = 0, K = 5, outlierPair: number | null = null) {
  const random = seededRandom(seed);
  let t = 0;
  const at = (mean: number) => mean * (1 + cv * normal(random)) * (1 - drift * t++);
  const baseline = Array.from({ length: K }, () => at(1000));
  const best: number[] = [];
  const candidate: number[] = [];
  for (let i = 0; i < K; i++) {
    best.push(at(1000));
    // A burst of other work on the machine during one candidate repetition.
    candidate.push(at(1000 * trueSpeedup) * (i === outlierPair ? 0.3 : 1));
  }
  return decideTrial({ best, candidate, noiseFloor: noiseFloor(baseline), lossDelta: 0, lossTolerance: 0.05, recipeChange: false, allowRecipeChanges: false });
}

const rate = (speedup: number, decision: string, sims = 200, cv?: number, drift?: number, K?: number, outlierPair: number | null = null) =>
  Array.from({ length: sims }, (_, i) => simulate(1000 + i, speedup, cv, drift, K, outlierPair)).filter((v) => v.decision === decision).length / sims;

describe('trial decision (A/B/A/B, paired bootstrap CI of the speedup)', () => {
  it('accepts a true 10% gain', () => {
    const v = simulate(7, 1.1);
    expect(v.decision).toBe('accept');
    expect(v.kept).toBe(true);
    expect(v.speedup.low).toBeGreaterThan(1);
    expect(rate(1.1, 'accept')).toBeGreaterThan(0.9);
  });

  it('accepts a no-op change in at most 5% of 200 seeded simulations, with a drift of 1% per repetition too', () => {
    const flat = rate(1.0, 'accept');
    const drifting = rate(1.0, 'accept', 200, 0.03, 0.01);
    const byK = [7, 9].map((k) => rate(1.0, 'accept', 200, 0.03, 0, k));
    console.log(
      `false accepts of a 0% change over 200 simulations: ${(100 * flat).toFixed(1)}% steady, ${(100 * drifting).toFixed(1)}% with drift (5 pairs); ${byK.map((r) => `${(100 * r).toFixed(1)}%`).join(', ')} at 7, 9 pairs`,
    );
    expect(flat).toBeLessThanOrEqual(0.05);
    expect(drifting).toBeLessThanOrEqual(0.05);
    for (const r of byK) expect(r).toBeLessThanOrEqual(0.05);
  });

  it('with 9 pairs, keeps a true 50% gain through one repetition hit by a burst of other work', () => {
    expect(rate(1.5, 'accept', 100, 0.03, 0, 9, 4)).toBeGreaterThan(0.95);
    expect(rate(1.5, 'accept', 100, 0.03, 0, 5, 2)).toBe(0);
  });

  it('uses the order-statistic interval of the median, with its true coverage', () => {
    // 9 values: [x(2), x(8)] covers 1 - 2 x 10/512 = 96.1%; 5 values: only [min, max], 93.75%.
    expect(medianOrderInterval([9, 1, 8, 2, 7, 3, 6, 4, 5])).toEqual({ low: 2, median: 5, high: 8, coverage: 1 - 20 / 512 });
    expect(medianOrderInterval([5, 1, 4, 2, 3])).toEqual({ low: 1, median: 3, high: 5, coverage: 0.9375 });
    expect(simulate(7, 1.1).why).toContain('with 5 pairs the widest interval covers only 93.8%');
  });

  it('rejects a 10% loss', () => {
    const v = simulate(11, 0.9);
    expect(v.decision).toBe('reject');
    expect(v.speedup.high).toBeLessThan(1);
    expect(rate(0.9, 'reject')).toBeGreaterThan(0.9);
  });

  it('reports a change within the noise as inconclusive, and says why', () => {
    const v = simulate(3, 1.01, 0.08);
    expect(v.decision).toBe('inconclusive');
    expect(v.kept).toBe(false);
    expect(v.why).toMatch(/could be noise|within the noise floor/);
  });

  it('pairs the ratios, so a drift that hits both sides does not decide', () => {
    // A machine slowing by 5% per repetition: unpaired medians would mix the drift into the speedup.
    const best = [1000, 950, 900, 850, 800];
    const candidate = best.map((b) => b * 0.999 * 0.975);
    const ci = pairedSpeedup(best, candidate);
    expect(ci.median).toBeCloseTo(0.999 * 0.975, 9);
    expect(ci.low).toBeCloseTo(0.999 * 0.975, 9);
    expect(ci.high - ci.low).toBeLessThan(1e-9);
  });

  it('rejects as "changes results" a faster change whose loss moved beyond the tolerance', () => {
    const v = decideTrial({ best: [100, 101, 99, 100, 100], candidate: [150, 151, 149, 150, 150], noiseFloor: 0.01, lossDelta: 0.2, lossTolerance: 0.05, recipeChange: false, allowRecipeChanges: false });
    expect(v.decision).toBe('changes-results');
    expect(v.kept).toBe(false);
    expect(v.why).toContain('20.000%');
  });

  it('proposes a faster recipe change instead of keeping it, unless recipe changes are allowed', () => {
    const evidence = { best: [100, 101, 99, 100, 100], candidate: [150, 151, 149, 150, 150], noiseFloor: 0.01, lossDelta: 0.3, lossTolerance: 0.05, recipeChange: true };
    expect(decideTrial({ ...evidence, allowRecipeChanges: false })).toMatchObject({ decision: 'proposed', kept: false });
    expect(decideTrial({ ...evidence, allowRecipeChanges: true })).toMatchObject({ decision: 'accept', kept: true });
  });

  it('refuses unpaired or non-positive measurements, naming them', () => {
    expect(() => pairedSpeedup([1, 2], [1])).toThrow(/as many candidate as best repetitions.*1 and 2/);
    expect(() => pairedSpeedup([1, 0], [1, 1])).toThrow(/best repetition 2 measured 0 samples\/s/);
  });

  it('computes the mean loss over every step the events cover, whatever their windows', () => {
    // Steps 1..6 with losses 6..1: the same mean from windows of 2+4 steps and of 3+3.
    expect(meanLoss([{ globalStep: 2, loss: 5.5 }, { globalStep: 6, loss: 2.5 }])).toBeCloseTo(3.5, 12);
    expect(meanLoss([{ globalStep: 6, loss: 2 }, { globalStep: 3, loss: 5 }])).toBeCloseTo(3.5, 12);
    expect(meanLoss([])).toBeNull();
    expect(relativeLossDelta(1.1, 1)).toBeCloseTo(0.1, 12);
    expect(relativeLossDelta(null, 1)).toBeNull();
  });

  it('keeps or rejects nothing on an interval under 90%: with 2 to 4 pairs a clear change only leans, and says so (issue 38)', () => {
    expect(pairsToDecide()).toBe(5);
    expect(orderIntervalCoverage(4)).toBe(0.875);
    // 50% faster, every pair: 5 pairs keep it; 3 pairs (75%) only lean, and neither keep nor reject.
    expect(simulate(7, 1.5).decision).toBe('accept');
    const faster = simulate(7, 1.5, 0.03, 0, 3);
    expect(faster).toMatchObject({ decision: 'inconclusive', kept: false, lean: 'faster' });
    expect(faster.speedup.low).toBeGreaterThan(1);
    expect(faster.why).toMatch(/^leaning faster: speedup 1\.\d{3}x, 75\.0% CI .*; a change is kept or rejected only on an interval of 90% or more \(5 pairs or more: repeat 5\)$/);
    const slower = simulate(7, 0.6, 0.03, 0, 4);
    expect(slower).toMatchObject({ decision: 'inconclusive', kept: false, lean: 'slower' });
    // Over 200 seeded no-op changes at 2, 3 and 4 pairs: nothing kept, nothing rejected.
    for (const k of [2, 3, 4]) expect(rate(1.0, 'accept', 200, 0.03, 0, k) + rate(1.0, 'reject', 200, 0.03, 0, k)).toBe(0);
    // A recipe change that would be proposed only leans too.
    const recipe = decideTrial({ best: [100, 100, 100], candidate: [150, 151, 152], noiseFloor: 0.01, lossDelta: null, lossTolerance: 0.05, recipeChange: true, allowRecipeChanges: false });
    expect(recipe).toMatchObject({ decision: 'inconclusive', lean: 'faster', kept: false });
    // Within the noise, nothing to lean on.
    expect(decideTrial({ best: [100, 100, 100], candidate: [100.5, 100.4, 100.6], noiseFloor: 0.05, lossDelta: 0, lossTolerance: 0.05, recipeChange: false, allowRecipeChanges: false }).lean).toBeNull();
    // The label a person reads, and what the form says before the start.
    const trial = { decision: faster.decision, lean: faster.lean ?? undefined, bestSamplesPerSec: [1, 2, 3], candidateSamplesPerSec: [1, 2, 3] };
    expect(trialDecisionWords(trial)).toBe('leaning faster, 75.0%');
    expect(trialDecisionWords({ ...trial, decision: 'accept', lean: undefined })).toBe('accepted');
    expect(pairsAllow(3)).toBe("3 pairs a trial: each speedup's interval covers only 75.0%, so trials can lean faster or slower but keep or reject nothing; 5 or more decide");
    expect(pairsAllow(5)).toBe("5 pairs a trial: each speedup's interval covers 93.8%, enough to keep or reject a change");
    expect(pairsAllow(1)).toBe('1 pair a trial gives no interval: trials can neither keep, reject nor lean; 5 or more decide');
  });

  it('knows the true coverage of the paired interval from the number of pairs, and the report names it', () => {
    const pairs = [2, 3, 5, 6, 9];
    expect(pairs.map((n) => orderIntervalCoverage(n))).toEqual(pairs.map((n) => medianOrderInterval(Array.from({ length: n }, (_, i) => i)).coverage));
    expect(orderIntervalCoverage(2)).toBe(0.5);
    expect(orderIntervalCoverage(5)).toBe(0.9375);
    expect(orderIntervalCoverage(6)).toBeGreaterThanOrEqual(0.95);
    const s = { low: 1.05, median: 1.12, high: 1.2 };
    expect(pairedSpeedupText(s, 5)).toBe('+12% (93.8% CI +5% to +20%)');
    expect(pairedSpeedupText(s, 8)).toBe('+12% (95% CI +5% to +20%)');
  });
});
