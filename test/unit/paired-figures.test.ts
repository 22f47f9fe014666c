// Issue 38: every figure shown beside a paired speedup derives from it, so the arithmetic on screen works out.
import { describe, expect, it } from 'vitest';

import { finalFigures, trialFigures } from '../../src-main/api/paired-figures';
import { pairedSpeedup } from '../../src-main/core/optimise/trial-decision';

describe('paired figures', () => {
  it("gives the candidate as the current best's median times the median paired ratio, where the sides' own medians disagree", () => {
    // The case in miniature: each side's own median says 309 -> 331 (+7%), the paired ratios a slowdown.
    const best = [300, 309, 400, 250, 500];
    const candidate = [280, 331, 360, 240, 460];
    const { coverage, ...speedup } = pairedSpeedup(best, candidate);
    expect(coverage).toBe(0.9375);
    expect(speedup.median).toBeLessThan(1);
    const f = trialFigures({ bestSamplesPerSec: best, candidateSamplesPerSec: candidate, speedup })!;
    expect(f.best).toBe(309);
    expect(f.candidate / f.best).toBeCloseTo(speedup.median, 12);
    expect(f.candidateCi.low / f.best).toBeCloseTo(speedup.low, 12);
    expect(f.candidateCi.high / f.best).toBeCloseTo(speedup.high, 12);
    expect(f).toMatchObject({ pairs: 5, level: '93.8%', unit: 'samples/s' });
    // A crashed trial has no figures; the energy objective's are in samples per joule.
    expect(trialFigures({ bestSamplesPerSec: [1], candidateSamplesPerSec: [], speedup: null })).toBeNull();
    const energy = trialFigures({ bestSamplesPerSec: best, candidateSamplesPerSec: candidate, bestSamplesPerJoule: [10, 11, 12], candidateSamplesPerJoule: [12, 13, 14], speedup }, 'energy')!;
    expect(energy).toMatchObject({ best: 11, unit: 'samples/J', pairs: 3, level: '75.0%' });
  });

  it('compares the final configuration with the baseline as re-measured in the final comparison', () => {
    const baseline = { samplesPerSec: { low: 780, median: 793, high: 800 } };
    const speedup = { low: 2.9, median: 3.096, high: 3.3 };
    // The headline: 793 at the start, ~1,262 in the final comparison, final 3,908 at 3.096x.
    const final = { changes: ['a'], speedup, samplesPerSec: { low: 3800, median: 3908, high: 4000 }, baselineSamplesPerSec: { low: 1250, median: 1262, high: 1270 } };
    const f = finalFigures(final, baseline, 5)!;
    expect(f).toMatchObject({ remeasured: true, best: 1262, level: '93.8%' });
    expect(f.candidate).toBeCloseTo(1262 * 3.096, 9);
    // A run file from before the re-measured side was kept: implied from the final's median and the speedup.
    const old = finalFigures({ ...final, baselineSamplesPerSec: undefined }, baseline, 5)!;
    expect(old.best).toBeCloseTo(3908 / 3.096, 9);
    expect(old.candidate).toBeCloseTo(3908, 9);
    // Nothing kept: the baseline as measured, speedup 1; the energy objective has no samples/s to derive.
    const none = finalFigures({ changes: [], speedup: { low: 1, median: 1, high: 1 }, samplesPerSec: baseline.samplesPerSec }, baseline, 5)!;
    expect(none).toMatchObject({ remeasured: false, best: 793, candidate: 793 });
    expect(finalFigures(final, baseline, 5, 'energy')).toBeNull();
  });
});
