import type { ComparePoint, ThroughputPoint } from '@api/charts/compare-charts';
import { ScriptTrainResultSchema } from '@api/script-run';
import type { RunDetail } from '@api/training';

/**
 * A script run's loss curve for Compare: its stored points that carry a loss (a
 * script run has no engine step events), and samples per step from its batch
 * over every rank. Null for any other run.
 */
export function scriptCompareCurve(run: RunDetail): { steps: ComparePoint[]; samplesPerStep: number } | null {
  if ((run.record as { config?: { target?: { kind?: unknown } } }).config?.target?.kind !== 'script') return null;
  const parsed = ScriptTrainResultSchema.safeParse((run.record as { result?: unknown }).result);
  if (!parsed.success) return null;
  const r = parsed.data;
  const steps = r.series.flatMap((p) => (p.loss !== null && p.lossStep !== null ? [{ globalStep: p.lossStep, t: p.t, loss: p.loss, accuracy: null }] : []));
  return { steps, samplesPerStep: (r.batchSize ?? 0) * Math.max(1, r.worldSize) };
}

/** A script run's samples/s over time for Compare (its stored points); null for any other run. */
export function scriptThroughput(run: RunDetail): ThroughputPoint[] | null {
  if ((run.record as { config?: { target?: { kind?: unknown } } }).config?.target?.kind !== 'script') return null;
  const parsed = ScriptTrainResultSchema.safeParse((run.record as { result?: unknown }).result);
  return parsed.success ? parsed.data.series.map((p) => ({ t: p.t, samplesPerSec: p.samplesPerSec })) : null;
}
