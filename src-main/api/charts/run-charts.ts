// Chart options for one training run, either target (loss curve, phases, ops, memory; a script run's samples/s
// and data wait): pure functions of the run's data, so the live view, the run's page and a report draw the same charts.
import type { EChartsCoreOption } from 'echarts/core';

import { PHASE_NAMES, PHASE_NAMES_WITH_OTHER } from '../benchmark';
import type { ScriptRunPoint } from '../train-result';
import { formatValue, GRID_LINE, MUTED, titleAndLegend, tooltip } from './theme';

const axis = { axisLabel: { color: MUTED }, splitLine: { lineStyle: { color: GRID_LINE } } };

function head(text: string, legend: boolean) {
  const h = titleAndLegend(text, legend);
  return { title: h.title, legend: h.legend, top: h.gridTop };
}

/** The fields of a step event the curves read. */
export interface CurvePoint {
  globalStep: number;
  loss: number;
  accuracy: number | null;
}

/**
 * The training loss over steps, with the accuracy on a second axis (the engine's step events carry it); a script's
 * points have no accuracy (`accuracy: false`): the loss alone, its axis fitted to the curve.
 */
export function lossCurveOption(steps: readonly CurvePoint[], o: { accuracy?: boolean } = {}): EChartsCoreOption {
  if (o.accuracy === false) {
    const h = head('Training loss', false);
    return {
      animation: false,
      title: h.title,
      tooltip: tooltip(''),
      grid: { left: 60, right: 24, top: h.top + 8, bottom: 28 },
      xAxis: { type: 'value', name: 'step', ...axis },
      yAxis: { type: 'value', scale: true, ...axis },
      series: [{ name: 'loss', type: 'line', showSymbol: false, data: steps.map((e) => [e.globalStep, e.loss]) }],
    };
  }
  const h = head('Training loss and accuracy', true);
  return {
    animation: false,
    title: h.title,
    legend: h.legend,
    tooltip: tooltip(''),
    grid: { left: 52, right: 52, top: h.top + 8, bottom: 28 },
    xAxis: { type: 'value', name: 'step', ...axis },
    // The legend names the two axes (loss left, accuracy right); axis names would sit on the legend's line.
    yAxis: [
      { type: 'value', min: 0, ...axis },
      { type: 'value', min: 0, max: 1, ...axis, splitLine: { show: false } },
    ],
    series: [
      { name: 'loss', type: 'line', showSymbol: false, data: steps.map((e) => [e.globalStep, e.loss]) },
      { name: 'accuracy', type: 'line', yAxisIndex: 1, showSymbol: false, data: steps.filter((e) => e.accuracy !== null).map((e) => [e.globalStep, e.accuracy]) },
    ],
  };
}

/** A [step, value] pair of a script run's curves. */
export type StepPoint = [number, number];

/** A script run's curves: [step, value] pairs, points without a value left out. */
export function scriptRunCurves(points: readonly ScriptRunPoint[]): { rate: StepPoint[]; dataWait: StepPoint[]; loss: StepPoint[] } {
  const rate: StepPoint[] = [];
  const dataWait: StepPoint[] = [];
  const loss: StepPoint[] = [];
  for (const p of points) appendScriptRunPoint({ rate, dataWait, loss }, p);
  return { rate, dataWait, loss };
}

/** Appends one point to the curves' data (the live view's path: charts get data, never a rebuilt option). */
export function appendScriptRunPoint(into: { rate: StepPoint[]; dataWait: StepPoint[]; loss: StepPoint[] }, p: ScriptRunPoint): void {
  if (p.samplesPerSec !== null) into.rate.push([p.step, Number(p.samplesPerSec.toFixed(1))]);
  if (p.dataWaitPercent !== null) into.dataWait.push([p.step, Number(p.dataWaitPercent.toFixed(2))]);
  if (p.loss !== null && p.lossStep !== null) into.loss.push([p.lossStep, p.loss]);
}

/** A script run's loss curve: the scalar the script passed to backward(), mean per point. */
export function scriptLossOption(loss: readonly StepPoint[] = []): EChartsCoreOption {
  return lossCurveOption(
    loss.map(([globalStep, l]) => ({ globalStep, loss: l, accuracy: null })),
    { accuracy: false },
  );
}

/** A script run's samples/s (left axis) and the share of the step blocked on the DataLoader (right axis) over steps. */
export function scriptThroughputOption(rate: readonly StepPoint[] = [], dataWait: readonly StepPoint[] = []): EChartsCoreOption {
  const h = head('Samples/s and data wait over steps', true);
  return {
    animation: false,
    title: h.title,
    legend: h.legend,
    tooltip: tooltip(''),
    grid: { left: 60, right: 52, top: h.top + 8, bottom: 28 },
    xAxis: { type: 'value', name: 'step', ...axis },
    // The legend names the axes (samples/s left, data wait % right).
    yAxis: [
      { type: 'value', min: 0, ...axis },
      { type: 'value', min: 0, max: 100, ...axis, splitLine: { show: false } },
    ],
    series: [
      { name: 'samples/s', type: 'line', showSymbol: false, data: [...rate] },
      { name: 'data wait %', type: 'line', yAxisIndex: 1, showSymbol: false, data: [...dataWait] },
    ],
  };
}

/** What a screen reader hears for a script run's two charts. */
export function scriptRunLabels(c: { rate: readonly StepPoint[]; dataWait: readonly StepPoint[]; loss: readonly StepPoint[] }): { throughput: string; loss: string } {
  const lastRate = c.rate.at(-1);
  const lastWait = c.dataWait.at(-1);
  const lastLoss = c.loss.at(-1);
  return {
    throughput: lastRate
      ? `Samples per second over ${c.rate.length} points, last ${formatValue(lastRate[1])} at step ${lastRate[0]}; data wait ${lastWait ? `${formatValue(lastWait[1])}%` : 'unknown'}`
      : 'Samples per second: no step yet',
    loss: lastLoss ? `Training loss over ${c.loss.length} points, last ${formatValue(lastLoss[1])} at step ${lastLoss[0]}` : 'Training loss: none read yet',
  };
}

// One horizontal bar per label, for the phase and op breakdowns.
// Labels read top to bottom in the order given (a category axis otherwise starts at the bottom).
/** Horizontal bars; `subtitle` (what the figures are: a mean of which steps) goes on a second line under the title. */
function bars(title: string, labels: string[], values: number[], color: string, labelWidth: number, unit: string, subtitle?: string): EChartsCoreOption {
  const h = head(title, false);
  return {
    animation: false,
    // One line each: at 1440 px the qualifier in the title's line pushed "… ms in all" out of the panel.
    title: subtitle ? { ...h.title, subtext: subtitle, itemGap: 6, subtextStyle: { color: MUTED, fontSize: 11 } } : h.title,
    tooltip: { ...tooltip(unit), axisPointer: { type: 'shadow' } },
    grid: { left: labelWidth, right: 16, top: h.top + (subtitle ? 20 : 6), bottom: 24 },
    xAxis: { type: 'value', ...axis },
    yAxis: { type: 'category', inverse: true, data: labels, axisLabel: { color: MUTED } },
    series: [{ type: 'bar', data: values, itemStyle: { color } }],
  };
}

/**
 * The phases a record holds, in bar order: the named ones, and `other` where the record has it (a
 * benchmark's: its step less the named phases), so the bars add up to the step shown beside them.
 */
function phasesOf(phasesMs: Readonly<Record<string, number>>): readonly string[] {
  return (phasesMs.other ?? 0) > 0 ? PHASE_NAMES_WITH_OTHER : PHASE_NAMES;
}

/** The phases' total per step, in ms: `other` included where the record has it. */
export function phaseTotalMs(phasesMs: Readonly<Record<string, number>>): number {
  return phasesOf(phasesMs).reduce((a, n) => a + (phasesMs[n] ?? 0), 0);
}

/** A benchmark's phases (and a script training run's): the mean of its measured steps, `other` making up a benchmark's steady step. */
export const BENCHMARK_PHASES_OVER = 'mean of the measured steps';

/**
 * Which steps a run's phases are the mean of: an engine training run's over every step, its warm-up with
 * them and its evaluation not (so their total differs from the steady step and the wall-clock mean beside
 * it); a script's, and any benchmark's, over the measured steps.
 */
export function trainPhasesOver(kind: string | undefined): string | undefined {
  return kind === 'engine' ? 'mean of every step, warm-up included, evaluation not' : kind === 'script' ? BENCHMARK_PHASES_OVER : undefined;
}

/**
 * Whole percents of a total that add up to 100 (largest remainders get the rounding): rounded one by one,
 * 3 + 25 + 43 + 28 read as 99% of a step.
 */
export function wholePercents(values: readonly number[]): number[] {
  const total = values.reduce((a, b) => a + Math.max(0, b), 0);
  if (!(total > 0)) return values.map(() => 0);
  const exact = values.map((v) => (100 * Math.max(0, v)) / total);
  const floors = exact.map(Math.floor);
  let left = 100 - floors.reduce((a, b) => a + b, 0);
  const order = exact.map((e, i) => ({ i, rest: e - floors[i] })).sort((a, b) => b.rest - a.rest);
  for (const { i } of order) {
    if (left <= 0) break;
    floors[i]++;
    left--;
  }
  return floors;
}

/** The step's phases in the order they happen (data first), each with its share of the total. */
export function phaseBarsOption(phasesMs: Readonly<Record<string, number>>, over?: string): EChartsCoreOption {
  const names = phasesOf(phasesMs);
  const total = phaseTotalMs(phasesMs);
  const shares = wholePercents(names.map((n) => phasesMs[n] ?? 0));
  const labels = names.map((n, i) => `${n} ${shares[i]}%`);
  return bars(`Time per step by phase: ${formatValue(total, 'ms')} in all`, labels, names.map((n) => Number((phasesMs[n] ?? 0).toFixed(3))), '#4fb3ff', 96, 'ms', over);
}

/** Measurement-mode GPU runs say where the step's time went, by op (the ten largest, largest on top). */
export function opSharesOption(opShares: readonly { op: string; share: number }[]): EChartsCoreOption | null {
  const shares = opShares.slice(0, 10).reverse();
  if (!shares.length) return null;
  return bars('Share of step time by op (%)', shares.map((o) => o.op), shares.map((o) => Number((100 * o.share).toFixed(1))), '#d29922', 170, '%');
}

/** Memory kinds as a person names them, in the order the model fills them. */
export const MEMORY_KINDS: Readonly<Record<string, string>> = {
  weights: 'weights',
  gradients: 'gradients',
  optimizerState: 'optimizer state',
  activations: 'activations',
  activationGrads: 'activation gradients',
  batchData: 'batch data',
  workspace: 'workspace',
};

export function memoryKindsOption(memory: { predicted: Readonly<Record<string, number>>; measured: Readonly<Record<string, number>> }): EChartsCoreOption {
  const kinds = Object.keys(MEMORY_KINDS);
  const mb = (x: number) => Number((x / 1e6).toFixed(2));
  const h = head('Memory by kind (MB)', true);
  return {
    animation: false,
    title: h.title,
    legend: h.legend,
    tooltip: { ...tooltip('MB'), axisPointer: { type: 'shadow' } },
    grid: { left: 130, right: 16, top: h.top + 6, bottom: 24 },
    xAxis: { type: 'value', ...axis },
    yAxis: { type: 'category', inverse: true, data: kinds.map((k) => MEMORY_KINDS[k]), axisLabel: { color: MUTED } },
    series: [
      { name: 'predicted', type: 'bar', data: kinds.map((k) => mb(memory.predicted[k] ?? 0)), itemStyle: { color: '#4fb3ff' } },
      { name: 'measured', type: 'bar', data: kinds.map((k) => mb(memory.measured[k] ?? 0)), itemStyle: { color: '#3fb950' } },
    ],
  };
}
