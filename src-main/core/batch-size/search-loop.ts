import { ApiError } from '../../api/errors';
import type { PlannedPoint } from './planner';
import { nextCandidate, pickBatches } from './planner';

/** What the one batch-size search needs of a target: a trial at a batch, and whether the user cancelled. */
export interface BatchTrialRunner<T extends PlannedPoint> {
  /**
   * A short training at `batchSize`, as a data point: it trained and fits within the headroom, or it did not
   * (an out-of-memory error, a crash); any other failure ends the search by throwing.
   */
  trial(batchSize: number): Promise<T>;
  cancelled(): boolean;
}

export interface BatchSearchOutcome<T> {
  trials: T[];
  largestFitting: number | null;
  recommended: number | null;
  /** The cancel that stopped the search before it ran out of batches to try; null when it did not. */
  stopped: ApiError | null;
}

/**
 * The batch-size search, either target (issue 25): from the seed (the engine's memory model's largest
 * fitting power of two; a script's start batch), powers of two up to the first failure, then bisection
 * between the last fit and the first failure, then (given `ladderFrom`, the engine's user batch) that
 * batch's doublings below the seed (planner.ts); then the largest fitting batch and the one to use.
 * The engine's and the script's services only say how a trial runs. A cancel ends it with the trials finished so far.
 */
export async function searchBatches<T extends PlannedPoint>(runner: BatchTrialRunner<T>, seed: number, maxBatch: number, ladderFrom?: number): Promise<BatchSearchOutcome<T>> {
  const trials: T[] = [];
  const next = () => nextCandidate(seed, maxBatch, trials, ladderFrom);
  for (let b = next(); b !== null; b = next()) {
    // A cancel keeps the trials finished before it: they are measurements, and the answer from them is shown as such.
    if (runner.cancelled()) return { trials, ...pickBatches(trials), stopped: new ApiError('E_CANCELLED', `the batch-size search was cancelled after ${trials.length} trial(s), before batch ${b}`) };
    try {
      trials.push(await runner.trial(b));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'E_CANCELLED' && runner.cancelled()) return { trials, ...pickBatches(trials), stopped: err };
      throw err;
    }
  }
  return { trials, ...pickBatches(trials), stopped: null };
}
