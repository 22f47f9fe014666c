/**
 * The batch-size search as pure decisions: which batch to try next (from the target's seed, powers of two up
 * to the first failure, then a binary search between the last fit and the first failure, then the ladder from
 * the user's batch up to the seed), and which batch to recommend from the measurements. No target here, so
 * every branch is unit-tested with made-up outcomes.
 */

import { THROUGHPUT_NOISE } from '../../api/batch-size';

/** What the planner needs of a finished trial. */
export interface PlannedPoint {
  batchSize: number;
  /** Trained, with its peak memory inside the headroom. */
  fits: boolean;
  samplesPerSec: number | null;
}

/** The smallest step the binary search still takes near `batch`: 1/16 of it, as a power of two. */
export function granularity(batch: number): number {
  let g = 1;
  while (g * 32 <= batch) g *= 2;
  return g;
}

/**
 * The next batch to try, or null when the search has its answer. Once the largest fitting batch is
 * found, `ladderFrom` (the user's batch; the engine's search only) adds ladderFrom x 2^k below the seed
 * and the largest fit, smallest first: the memory model seeds high, and without them the fastest batch
 * would be chosen among huge batches only, never against the user's own (ADR 0034).
 */
export function nextCandidate(seed: number, maxBatch: number, points: PlannedPoint[], ladderFrom?: number): number | null {
  const next = nextBoundary(seed, maxBatch, points);
  if (next !== null || ladderFrom === undefined) return next;
  const lo = largestFit(points);
  if (lo === 0) return null; // nothing fits: no ladder below nothing
  const tried = new Set(points.map((p) => p.batchSize));
  for (let b = ladderFrom; b < seed && b < lo; b *= 2) if (!tried.has(b)) return b;
  return null;
}

function largestFit(points: PlannedPoint[]): number {
  const fitting = points.filter((p) => p.fits).map((p) => p.batchSize);
  return fitting.length ? Math.max(...fitting) : 0;
}

/** Up from the seed to the first failure, then bisection: where the memory runs out. */
function nextBoundary(seed: number, maxBatch: number, points: PlannedPoint[]): number | null {
  if (points.length === 0) return Math.min(seed, maxBatch);
  const tried = new Set(points.map((p) => p.batchSize));
  const lo = largestFit(points);
  // Failures below the largest fit (a crash, say) do not bound the search; the nearest one above does.
  const above = points.filter((p) => !p.fits && p.batchSize > lo).map((p) => p.batchSize);
  const hi = above.length ? Math.min(...above) : Infinity;
  let next: number;
  if (lo === 0) {
    next = Math.floor(hi / 2); // nothing fits yet: halve down from the smallest failure
    if (next < 1) return null;
  } else if (hi === Infinity) {
    if (lo >= maxBatch) return null; // the data, not the memory, is the limit
    next = Math.min(lo * 2, maxBatch);
  } else {
    const g = granularity(lo);
    if (hi - lo <= g) return null;
    next = lo + Math.max(g, Math.floor((hi - lo) / 2 / g) * g);
    if (next >= hi) return null;
  }
  return tried.has(next) ? null : next;
}

/**
 * Largest fitting batch, and the one to recommend: the smallest measured batch within THROUGHPUT_NOISE
 * of the best samples/s. A batch change is a change of the training recipe (LR, generalisation), so
 * the least change that gets the speed wins (ADR 0034). A trial without samples/s is never the
 * fastest; when no fitting trial has one, the largest fitting batch is all there is to say.
 */
export function pickBatches(points: PlannedPoint[]): { largestFitting: number | null; recommended: number | null } {
  const fitting = points.filter((p) => p.fits);
  if (fitting.length === 0) return { largestFitting: null, recommended: null };
  const largestFitting = Math.max(...fitting.map((p) => p.batchSize));
  const measured = fitting.filter((p) => p.samplesPerSec !== null);
  if (measured.length === 0) return { largestFitting, recommended: largestFitting };
  const best = Math.max(...measured.map((p) => p.samplesPerSec as number));
  const recommended = Math.min(...measured.filter((p) => (p.samplesPerSec as number) >= best * (1 - THROUGHPUT_NOISE)).map((p) => p.batchSize));
  return { largestFitting, recommended };
}

