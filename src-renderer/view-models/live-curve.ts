import type { TrainEvent, TrainStepEvent } from '@api/training';

/** A [globalStep, value] point of the live run's loss or accuracy curve. */
export type CurvePoint = [number, number];

/**
 * The live run's loss and accuracy so far, as the chart draws them. Held by the live-run store, not the chart,
 * so a chart mounted later (the Runs area opened again, a reload) draws the run from its first logged step.
 */
export interface LiveCurve {
  loss: CurvePoint[];
  accuracy: CurvePoint[];
}

export function emptyLiveCurve(): LiveCurve {
  return { loss: [], accuracy: [] };
}

/**
 * Puts a step into the curve, in step order, unless the curve has it: the run's recorded events, the job's replay
 * and its live events overlap when a window re-attaches, and arrive in no fixed order (a live step can come before
 * the replay of the ones just before it, on a busy machine). A step is drawn once, in order, never dropped for
 * coming late. Returns whether it was new.
 */
export function appendStep(curve: LiveCurve, e: Pick<TrainStepEvent, 'globalStep' | 'loss' | 'accuracy'>): boolean {
  const at = insertionIndex(curve.loss, e.globalStep);
  if (at < 0) return false;
  curve.loss.splice(at, 0, [e.globalStep, e.loss]);
  if (e.accuracy !== null) {
    const a = insertionIndex(curve.accuracy, e.globalStep);
    if (a >= 0) curve.accuracy.splice(a, 0, [e.globalStep, e.accuracy]);
  }
  return true;
}

/** Where `step` goes in points sorted by step, or -1 when it is there; O(1) for the usual next step. */
function insertionIndex(points: readonly CurvePoint[], step: number): number {
  const n = points.length;
  if (n === 0 || points[n - 1][0] < step) return n;
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid][0] < step) lo = mid + 1;
    else hi = mid;
  }
  return points[lo]?.[0] === step ? -1 : lo;
}

/** The curve of a run's recorded events (runs.get): its steps in order, from its first logged one. */
export function curveOfEvents(events: readonly TrainEvent[]): LiveCurve {
  const curve = emptyLiveCurve();
  for (const e of events) if (e.type === 'step') appendStep(curve, e);
  return curve;
}
