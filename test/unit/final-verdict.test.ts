import { describe, expect, it } from 'vitest';

import type { OptimiseTrial } from '../../src-main/api/optimise';
import { measuredVerdict, speedupWithCi, unchangedVerdict } from '../../src-main/core/optimise/final-verdict';
import { pairedSpeedup } from '../../src-main/core/optimise/trial-decision';

const words = { subject: 'The script with workers 0 -> 2', unchanged: 'keep the script as it runs', allowRecipe: 'allow recipe changes (--allow-recipe-changes)' };

function trial(label: string, decision: OptimiseTrial['decision'], speedup: OptimiseTrial['speedup'], note: string | null = null): OptimiseTrial {
  return {
    index: 1, change: { knob: 'batchSize', from: 64, to: 128, kind: 'recipe', label, hypothesis: 'h', note }, decision, why: 'w', speedup,
    bestSamplesPerSec: [], candidateSamplesPerSec: [], lossDelta: null, kept: decision === 'accept', seconds: 1, error: null,
  };
}

describe('the final verdict both wizards give', () => {
  it('leads with a recipe change that beat the noise instead of saying nothing did (the script wizard hid a 1.44x)', () => {
    const trials = [trial('batch size 64 -> 128', 'proposed', { low: 1.4, median: 1.44, high: 1.48 }, 'scale the learning rate by 2 (linear rule)'), trial('workers 0 -> 2', 'reject', { low: 0.98, median: 1.0, high: 1.02 })];
    expect(unchangedVerdict(trials, 0.032, 10440, words)).toBe(
      'No change was kept (±3.2%): keep the script as it runs, 10,440 samples/s. Beat the noise but proposed, not kept, because it changes the training recipe: ' +
        'batch size 64 -> 128, 1.440x [1.400x–1.480x] (scale the learning rate by 2 (linear rule)). To keep it, allow recipe changes (--allow-recipe-changes).',
    );
    expect(unchangedVerdict([trials[1]], 0.032, 10440, words)).toBe('No change beat the noise (±3.2%): keep the script as it runs, 10,440 samples/s.');
  });

  it('names the true coverage of a few pairs, and says when the final measurement is slower', () => {
    const five = pairedSpeedup([100, 100, 100, 100, 100], [96, 97, 95, 98, 97]);
    expect(five.coverage).toBeCloseTo(0.9375, 4);
    const { coverage, ...speedup } = five;
    expect(speedupWithCi(speedup, coverage)).toBe('0.970x (93.8% CI 0.950x–0.980x)');
    expect(measuredVerdict([], speedup, coverage, 5, words)).toBe(
      'Measured again against the baseline, the script with workers 0 -> 2 is 0.970x (93.8% CI 0.950x–0.980x), below 1: noise (or a drift of this machine) outweighs the gains the trials found; treat them as unconfirmed.',
    );
    const win = pairedSpeedup([100, 100, 100, 100, 100, 100, 100, 100], [120, 121, 119, 122, 120, 121, 118, 120]);
    expect(measuredVerdict([], win, win.coverage, 8, words)).toBe("The script with workers 0 -> 2 is 1.200x (95% CI 1.180x–1.220x) the baseline's speed, measured A/B/A/B over 8 pairs.");
    const unsure = { low: 0.99, median: 1.01, high: 1.03 };
    expect(measuredVerdict([], unsure, 0.96, 8, words)).toMatch(/the interval includes 1, so this final measurement cannot confirm the gain the trials found\.$/);
  });
});
