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
 * Appends a step to the curve unless the curve already reaches it: the run's recorded events, the job's
 * replay and its live events overlap when a window re-attaches, and a step is drawn once, in order.
 */
export function appendStep(curve: LiveCurve, e: Pick<TrainStepEvent, 'globalStep' | 'loss' | 'accuracy'>): boolean {
  const last = curve.loss.at(-1);
  if (last !== undefined && e.globalStep <= last[0]) return false;
  curve.loss.push([e.globalStep, e.loss]);
  if (e.accuracy !== null) curve.accuracy.push([e.globalStep, e.accuracy]);
  return true;
}

/** The curve of a run's recorded events (runs.get): its steps in order, from its first logged one. */
export function curveOfEvents(events: readonly TrainEvent[]): LiveCurve {
  const curve = emptyLiveCurve();
  for (const e of events) if (e.type === 'step') appendStep(curve, e);
  return curve;
}
