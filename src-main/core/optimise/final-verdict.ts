import type { OptimiseTrial } from '../../api/optimise';
import { ciLevel } from '../../api/order-interval';
import type { Interval } from '../stats/medians';
import type { FinalWords } from '../targets/target-runner';


const x = (v: number) => `${v.toFixed(3)}x`;

/** "1.234x (95% CI 1.100x–1.300x)", naming the interval's true coverage when fewer pairs reach only less. */
export function speedupWithCi(speedup: Interval, coverage: number): string {
  return `${x(speedup.median)} (${ciLevel(coverage)} CI ${x(speedup.low)}–${x(speedup.high)})`;
}

/**
 * The wins that beat the noise but were only proposed (recipe changes not allowed): the final card leads with
 * them, since "no change beat the noise" would hide a measured 1.44x (issue 27).
 */
function proposedWins(trials: readonly OptimiseTrial[], words: FinalWords): string {
  const wins = trials.filter((t) => t.decision === 'proposed' && t.speedup);
  if (wins.length === 0) return '';
  const each = wins.map((t) => `${t.change.label}, ${x(t.speedup!.median)} [${x(t.speedup!.low)}–${x(t.speedup!.high)}]${t.change.note ? ` (${t.change.note})` : ''}`);
  return ` Beat the noise but proposed, not kept, because ${wins.length === 1 ? 'it changes' : 'they change'} the training recipe: ${each.join('; ')}. To keep ${wins.length === 1 ? 'it' : 'them'}, ${words.allowRecipe}.`;
}

/** The verdict when no change was kept: nothing beat the noise, or only recipe changes did. */
export function unchangedVerdict(trials: readonly OptimiseTrial[], noiseFloor: number, samplesPerSec: number, words: FinalWords): string {
  const proposed = proposedWins(trials, words);
  const confounded = confoundedTrials(trials);
  const head = proposed || confounded ? 'No change was kept' : 'No change beat the noise';
  return `${head} (±${(100 * noiseFloor).toFixed(1)}%): ${words.unchanged}, ${Math.round(samplesPerSec).toLocaleString('en-US')} samples/s.${proposed}${confounded}`;
}

/** Trials left undecided because the machine treated their two sides differently: never hidden behind "nothing beat the noise". */
function confoundedTrials(trials: readonly OptimiseTrial[]): string {
  const c = trials.filter((t) => t.decision === 'confounded');
  if (!c.length) return '';
  const list = c.map((t) => `${t.change.label} (trial ${t.index})`).join(', ');
  return ` Not decided because the machine was doing something else during one side of their pairs: ${list}; see their Conditions, and measure again on a quieter machine.`;
}

/**
 * The verdict of the final A/B/A/B measurement of the kept changes against the baseline: confirmed, not
 * confirmed (the interval includes 1), or slower (noise or a drift outweighs what the trials found).
 */
export function measuredVerdict(trials: readonly OptimiseTrial[], speedup: Interval, coverage: number, pairs: number, words: FinalWords, energy = false): string {
  const ci = speedupWithCi(speedup, coverage);
  // The energy objective's final compares samples per joule, not speed.
  const unit = energy ? ' in samples per joule of GPU energy' : '';
  const main =
    speedup.low > 1
      ? `${words.subject} is ${ci} the baseline's ${energy ? 'samples per joule of GPU energy' : 'speed'}, measured A/B/A/B over ${pairs} pairs.`
      : speedup.median >= 1
        ? `Measured again against the baseline, ${lower(words.subject)} is ${ci}${unit}: the interval includes 1, so this final measurement cannot confirm the gain the trials found.`
        : `Measured again against the baseline, ${lower(words.subject)} is ${ci}${unit}, below 1: noise (or a drift of this machine) outweighs the gains the trials found; treat them as unconfirmed.`;
  return main + proposedWins(trials, words) + confoundedTrials(trials);
}

const lower = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);
