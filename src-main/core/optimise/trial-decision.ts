import type { TrialDecision } from '../../api/optimise';
import { ciLevel, DECIDING_COVERAGE, orderIntervalCoverage, pairsToDecide } from '../../api/order-interval';
import type { Interval } from '../stats/medians';
import { medianInterval, relativeHalfWidth } from '../stats/medians';
import { decide } from '../stats/decision';
import type { AcrossStreams } from './loss-streams';
import { acrossStreamsText, streamsTolerance } from './loss-streams';

/** A median's order-statistic interval with its coverage always given (the paired speedup's level is always shown). */
export function medianOrderInterval(xs: readonly number[], confidence = 0.95): Interval & { coverage: number } {
  return { coverage: orderIntervalCoverage(xs.length, confidence), ...medianInterval(xs, { confidence }) };
}

/**
 * Speedup of a candidate over the current best from interleaved repetitions
 * (best, candidate, best, candidate ...): the ratio within each pair, so a drift
 * of the machine (another job, thermal throttling) hits both sides of a ratio
 * alike, then the median ratio with its order-statistic interval.
 */
export function pairedSpeedup(best: readonly number[], candidate: readonly number[]): Interval & { coverage: number } {
  if (best.length !== candidate.length || best.length === 0) {
    throw new RangeError(`pairedSpeedup needs as many candidate as best repetitions, at least one each; got ${candidate.length} and ${best.length}`);
  }
  const ratios = candidate.map((c, i) => {
    if (!(best[i] > 0)) throw new RangeError(`pairedSpeedup: best repetition ${i + 1} measured ${best[i]} samples/s; throughputs must be positive`);
    return c / best[i];
  });
  return medianOrderInterval(ratios);
}

/** The run-to-run noise of a configuration: half the width of its median's interval, relative to the median. */
export function noiseFloor(repetitions: readonly number[]): number {
  return relativeHalfWidth(medianInterval(repetitions));
}

export interface TrialEvidence {
  best: readonly number[];
  candidate: readonly number[];
  noiseFloor: number;
  /** Relative difference of the mean loss, candidate vs best; null when it was not measured. */
  lossDelta: number | null;
  lossTolerance: number;
  /** Recipe changes (batch, accumulation) change the trajectory by design: proposed, kept only when allowed. */
  recipeChange: boolean;
  allowRecipeChanges: boolean;
  /**
   * A change of which random streams the training draws from (DataLoader workers): why, in the knob table's words, and
   * how its loss was measured: across random streams (pair i on stream i: `across` the comparison, null where a loss
   * was not finite), or with the same seed (the reproducible preset asks for the same loss). Absent or null: a
   * deterministic change, judged with the same seed.
   */
  randomStreams?: { why: string; measured: 'across-streams' | 'same-seed'; across: AcrossStreams | null } | null;
}

export interface TrialVerdict {
  decision: TrialDecision;
  why: string;
  speedup: Interval;
  kept: boolean;
  /** Which way an interval too narrow in coverage to decide on points: the trial stays inconclusive. */
  lean: 'faster' | 'slower' | null;
}

/**
 * The keep/drop rule for one change: the loss guard first (a faster step that
 * trains differently is not the same training), then the speedup's CI against
 * 1 and the noise floor; a recipe change that wins is proposed, not kept,
 * unless the user allowed recipe changes.
 */
export function decideTrial(e: TrialEvidence): TrialVerdict {
  const { coverage, ...speedup } = pairedSpeedup(e.best, e.candidate);
  const caveat = coverage < 0.95 ? ` (with ${e.best.length} pairs the widest interval covers only ${(100 * coverage).toFixed(1)}%)` : '';
  const streams = e.randomStreams ?? null;
  const across = streams?.measured === 'across-streams' ? streams.across : null;
  if (!e.recipeChange && e.lossDelta !== null && !Number.isFinite(e.lossDelta)) {
    const how = streams?.measured === 'across-streams' ? 'on at least one of its random streams' : 'with the same seed';
    return { decision: 'changes-results', why: `the loss was not finite over the measured steps ${how}: the change makes the training diverge`, speedup, kept: false, lean: null };
  }
  const tolerance = across ? streamsTolerance(across, e.lossTolerance) : e.lossTolerance;
  if (!e.recipeChange && e.lossDelta !== null && e.lossDelta > tolerance) {
    const why = across
      ? `${acrossStreamsText(across, e.lossTolerance)}: the change alters the training beyond what a change of its random streams does (${streams!.why})`
      : `the mean loss over the measured steps moved by ${(100 * e.lossDelta).toFixed(3)}% with the same seed (tolerance ${(100 * e.lossTolerance).toFixed(3)}%): the change alters the training, not only its speed` +
        (streams ? `; it also changes which random streams the training draws from (${streams.why}), and the reproducible preset asks for the same loss with the same seed` : '');
    return { decision: 'changes-results', why, speedup, kept: false, lean: null };
  }
  const decided = decide(speedup, e.noiseFloor, ciLevel(coverage));
  // A change of the random streams says which loss test it passed, and its numbers: the report shows them.
  const lossTest = across && !e.recipeChange && e.lossDelta !== null ? `; the loss was checked across random streams (${streams!.why}): ${acrossStreamsText(across, e.lossTolerance)}` : '';
  const why = decided.why + caveat + lossTest;
  // An interval of few pairs would keep a no-op change too often (a 50% one half the time): it only leans.
  if (coverage < DECIDING_COVERAGE && (decided.decision === 'accept' || decided.decision === 'reject')) {
    const lean = decided.decision === 'accept' ? 'faster' : 'slower';
    const n = pairsToDecide();
    return {
      decision: 'inconclusive',
      why: `leaning ${lean}: ${why}; a change is kept or rejected only on an interval of ${(100 * DECIDING_COVERAGE).toFixed(0)}% or more (${n} pairs or more: repeat ${n})`,
      speedup,
      kept: false,
      lean,
    };
  }
  if (decided.decision === 'accept' && e.recipeChange && !e.allowRecipeChanges) {
    return { decision: 'proposed', why: `${why}; it changes the training recipe, so it is proposed, not kept (allow recipe changes to keep it)`, speedup, kept: false, lean: null };
  }
  return { decision: decided.decision, why, speedup, kept: decided.decision === 'accept', lean: null };
}

/** |a - b| / |b|: how far a candidate's mean loss lies from the best's. */
export function relativeLossDelta(candidate: number | null, best: number | null): number | null {
  if (candidate === null || best === null) return null;
  return Math.abs(candidate - best) / Math.max(Math.abs(best), 1e-12);
}
