import { ciLevel, orderIntervalCoverage } from './order-interval';

type Interval = { low: number; median: number; high: number; coverage?: number };

/**
 * The figures every view shows beside a paired speedup (issue 38), computed here once for the trial table, the
 * final card, the limits chart, the CLI and the ADR. The speedup is the median of the pairs' ratios (candidate
 * over current best, each pair measured back to back); the current best's figure is its median over the pairs,
 * and the candidate's is that times the speedup, so the arithmetic on screen works out. Each side's own median
 * is not put beside the speedup: over few pairs it can read 309 -> 331 next to a 0.933x speedup.
 */
export interface PairedFigures {
  pairs: number;
  /** The current best's (or the baseline's) median over the pairs, in `unit`. */
  best: number;
  /** best x speedup: the candidate as the speedup estimates it. */
  candidate: number;
  /** The candidate's figure at the ends of the speedup's interval. */
  candidateCi: Interval;
  speedup: Interval;
  /** The speedup interval's true coverage: "95%", or less over few pairs ("75.0%"). */
  level: string;
  /** What the trials compared: samples/s, or samples per joule under the energy objective. */
  unit: 'samples/s' | 'samples/J';
}

type Objective = 'throughput' | 'energy' | undefined;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function figures(best: number, speedup: Interval, pairs: number, unit: PairedFigures['unit']): PairedFigures {
  // Pairs unknown (0): the speedup's own coverage, where its record holds one.
  const coverage = pairs > 0 ? orderIntervalCoverage(pairs) : (speedup.coverage ?? 1);
  return {
    pairs,
    best,
    candidate: best * speedup.median,
    // Its coverage is the speedup's: a chart drawing it as an error bar names the same level.
    candidateCi: { low: best * speedup.low, median: best * speedup.median, high: best * speedup.high, ...(coverage < 0.95 ? { coverage } : {}) },
    speedup,
    level: ciLevel(coverage),
    unit,
  };
}

export interface TrialSides {
  bestSamplesPerSec: readonly number[];
  candidateSamplesPerSec: readonly number[];
  bestSamplesPerJoule?: readonly number[];
  candidateSamplesPerJoule?: readonly number[];
  speedup: Interval | null;
}

/** A trial's figures, in what its speedup compared; null when it measured no speedup (it crashed before its pairs finished). */
export function trialFigures(t: TrialSides, objective: Objective = 'throughput'): PairedFigures | null {
  const energy = objective === 'energy';
  const best = (energy ? t.bestSamplesPerJoule : t.bestSamplesPerSec) ?? [];
  const cand = (energy ? t.candidateSamplesPerJoule : t.candidateSamplesPerSec) ?? [];
  const pairs = Math.min(best.length, cand.length);
  return t.speedup && pairs > 0 ? figures(median(best.slice(0, pairs)), t.speedup, pairs, energy ? 'samples/J' : 'samples/s') : null;
}

/**
 * The final comparison's figures: the baseline as re-measured in it (not as measured at the start, which the
 * machine's load may have moved since), and the final configuration as the speedup estimates it. A result from
 * before the re-measured baseline was kept gives it as the final's median over the speedup. With nothing kept
 * nothing was measured again: the baseline as measured at the start, speedup 1. Null under the energy
 * objective, whose speedup is of samples per joule: only the speedup is shown.
 */
export function finalFigures(
  final: { changes: readonly string[]; speedup: Interval; samplesPerSec: Interval; baselineSamplesPerSec?: Interval },
  baseline: { samplesPerSec: Interval },
  pairs: number,
  objective: Objective = 'throughput',
): (PairedFigures & { remeasured: boolean }) | null {
  if (objective === 'energy') return null;
  if (!final.changes.length) return { ...figures(baseline.samplesPerSec.median, final.speedup, pairs, 'samples/s'), remeasured: false };
  const best = final.baselineSamplesPerSec?.median ?? final.samplesPerSec.median / final.speedup.median;
  return { ...figures(best, final.speedup, pairs, 'samples/s'), remeasured: true };
}

/** "1.170x (75.0% CI 1.020x–1.300x)". */
export function speedupText(f: Pick<PairedFigures, 'speedup' | 'level'>): string {
  const x = (v: number) => `${v.toFixed(3)}x`;
  return `${x(f.speedup.median)} (${f.level} CI ${x(f.speedup.low)}–${x(f.speedup.high)})`;
}
