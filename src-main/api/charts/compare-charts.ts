// Compare: the curves of several runs on one chart, against step, time or
// samples seen, with TensorBoard's debiased exponential smoothing.
import type { EChartsCoreOption } from 'echarts/core';

import { isScriptTrainRun, TrainRunResultSchema, type ScriptTrainRun } from '../train-result';
import type { RunDetail } from '../training';
import { colourFor, formatValue, lineSeries, titleAndLegend, tooltip, valueAxis } from './theme';

export type CompareAxis = 'step' | 'time' | 'samples';
export type CompareMetric = 'loss' | 'accuracy';

export const COMPARE_AXIS_NAMES: Readonly<Record<CompareAxis, string>> = { step: 'step', time: 'time (s)', samples: 'samples seen' };

/** The fields of a step event a compare curve reads. */
export interface ComparePoint {
  globalStep: number;
  /** ms since 1970; absent in runs recorded before events carried it. */
  t?: number;
  loss: number;
  accuracy: number | null;
}

export interface CompareRun {
  name: string;
  steps: readonly ComparePoint[];
  /** Samples per optimizer step (batch size times accumulation), for the samples axis. */
  samplesPerStep: number;
  /** When the run started (ms since 1970), the zero of the time axis; the first event's time when absent. */
  startedAt?: number;
}

/**
 * Debiased exponential moving average (TensorBoard's smoothing): weight 0 is the
 * raw curve, 0.99 nearly flat; the debiasing keeps the first points from being
 * pulled towards zero.
 */
export function smooth(values: readonly number[], weight: number): number[] {
  if (!(weight >= 0 && weight < 1)) throw new RangeError(`smoothing must be in [0, 1), got ${weight}`);
  let last = 0;
  let n = 0;
  return values.map((v) => {
    last = last * weight + (1 - weight) * v;
    n++;
    return weight === 0 ? v : last / (1 - weight ** n);
  });
}

function xOf(run: CompareRun, p: ComparePoint, axis: CompareAxis, t0: number | undefined): number | null {
  if (axis === 'step') return p.globalStep;
  if (axis === 'samples') return p.globalStep * run.samplesPerStep;
  return p.t === undefined || t0 === undefined ? null : (p.t - t0) / 1000;
}

export interface CompareChart {
  option: EChartsCoreOption;
  /** Runs left out, with why (e.g. no timestamps for a time axis). */
  missing: string[];
  /** What a screen reader announces. */
  label: string;
}

export function compareCurvesOption(runs: readonly CompareRun[], metric: CompareMetric, axis: CompareAxis, smoothing: number): CompareChart {
  const missing: string[] = [];
  const series = [];
  const last: string[] = [];
  for (const [i, run] of runs.entries()) {
    const t0 = run.startedAt ?? run.steps.find((p) => p.t !== undefined)?.t;
    const points = run.steps
      .map((p) => [xOf(run, p, axis, t0), metric === 'loss' ? p.loss : p.accuracy] as const)
      .filter((p): p is readonly [number, number] => p[0] !== null && p[1] !== null);
    if (!points.length) {
      missing.push(
        axis === 'time' && run.steps.length
          ? `${run.name}: its events carry no time (recorded before events were timestamped); compare it by step or samples`
          : `${run.name}: no ${metric} was recorded`,
      );
      continue;
    }
    const ys = smooth(points.map((p) => p[1]), smoothing);
    last.push(`${run.name} ${formatValue(ys.at(-1))}`);
    series.push({ ...lineSeries(run.name, colourFor(i)), data: points.map((p, k) => [p[0], ys[k]]) });
  }
  const title = `${metric === 'loss' ? 'Training loss' : 'Training accuracy'} by ${COMPARE_AXIS_NAMES[axis]}${smoothing > 0 ? `, smoothed ${smoothing}` : ''}`;
  const head = titleAndLegend(title, true);
  return {
    option: {
      animation: false,
      title: head.title,
      legend: head.legend,
      tooltip: tooltip(''),
      grid: { left: 52, right: 16, top: head.gridTop + 8, bottom: 40 },
      xAxis: valueAxis({ name: COMPARE_AXIS_NAMES[axis], nameLocation: 'middle', nameGap: 24, min: 0 }),
      yAxis: valueAxis(metric === 'accuracy' ? { min: 0, max: 1 } : { scale: true }),
      series,
    },
    missing,
    label: `${title}; last values: ${last.join(', ') || 'none'}`,
  };
}

/** The fields of a recorded point a throughput curve reads: when, and the rate since the previous point. */
export interface ThroughputPoint {
  /** ms since 1970; absent in runs recorded before events carried it. */
  t?: number;
  samplesPerSec: number | null;
}

export interface ThroughputRun {
  name: string;
  points: readonly ThroughputPoint[];
  /** When the run started (ms since 1970), the zero of the time axis; the first point's time when absent. */
  startedAt?: number;
}

/**
 * Samples/s over time, one line per run, each from its own start: what each run
 * sustained, warm-up and slow-downs included, beside the single figure of the table.
 */
export function compareThroughputOption(runs: readonly ThroughputRun[]): CompareChart {
  const missing: string[] = [];
  const series = [];
  const means: string[] = [];
  for (const [i, run] of runs.entries()) {
    const t0 = run.startedAt ?? run.points.find((p) => p.t !== undefined)?.t;
    const points = run.points
      .filter((p): p is { t: number; samplesPerSec: number } => p.t !== undefined && p.samplesPerSec !== null && Number.isFinite(p.samplesPerSec))
      .map((p) => [(p.t - (t0 ?? p.t)) / 1000, p.samplesPerSec] as const);
    if (!points.length) {
      missing.push(
        run.points.length
          ? `${run.name}: its steps carry no time or rate (recorded before events were timestamped)`
          : `${run.name}: no steps were recorded, so there is no rate over time (a benchmark's rate is in the table)`,
      );
      continue;
    }
    const mean = points.reduce((s, p) => s + p[1], 0) / points.length;
    means.push(`${run.name} mean ${formatValue(mean)}`);
    series.push({ ...lineSeries(run.name, colourFor(i)), data: points.map((p) => [p[0], p[1]]) });
  }
  const title = 'Samples/s over time';
  const head = titleAndLegend(title, true);
  return {
    option: {
      animation: false,
      title: head.title,
      legend: head.legend,
      tooltip: tooltip('samples/s'),
      grid: { left: 60, right: 16, top: head.gridTop + 8, bottom: 40 },
      xAxis: valueAxis({ name: 'time since start (s)', nameLocation: 'middle', nameGap: 24, min: 0 }),
      yAxis: valueAxis({ min: 0 }),
      series,
    },
    missing,
    label: `${title}; ${means.join(', ') || 'no data'} samples/s`,
  };
}

/**
 * A script run's loss curve for Compare: its stored points that carry a loss (a
 * script run has no engine step events), and samples per step from its batch
 * over every rank. Null for any other run.
 */
export function scriptCompareCurve(run: RunDetail): { steps: ComparePoint[]; samplesPerStep: number } | null {
  const r = scriptRunOf(run);
  if (!r) return null;
  const steps = r.target.series.flatMap((p) => (p.loss !== null && p.lossStep !== null ? [{ globalStep: p.lossStep, t: p.t, loss: p.loss, accuracy: null }] : []));
  return { steps, samplesPerStep: (r.batchSize ?? 0) * Math.max(1, r.target.worldSize) };
}

/** A script run's samples/s over time for Compare (its stored points); null for any other run. */
export function scriptThroughput(run: RunDetail): ThroughputPoint[] | null {
  return scriptRunOf(run)?.target.series.map((p) => ({ t: p.t, samplesPerSec: p.samplesPerSec })) ?? null;
}

/** A training run's result when it is a script's (read through the one schema); null for any other run. */
function scriptRunOf(run: RunDetail): ScriptTrainRun | null {
  if (run.summary.kind !== 'train') return null;
  const parsed = TrainRunResultSchema.safeParse((run.record as { result?: unknown }).result);
  return parsed.success && isScriptTrainRun(parsed.data) ? parsed.data : null;
}
