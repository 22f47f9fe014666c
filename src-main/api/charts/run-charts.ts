// Chart options for one run (loss curve, phases, ops, memory): pure functions of
// the run's data, so the app and the report generator draw the same charts.
import type { EChartsCoreOption } from 'echarts/core';

import { PHASE_NAMES } from '../benchmark';
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

export function lossCurveOption(steps: readonly CurvePoint[]): EChartsCoreOption {
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

// One horizontal bar per label, for the phase and op breakdowns.
// Labels read top to bottom in the order given (a category axis otherwise starts at the bottom).
function bars(title: string, labels: string[], values: number[], color: string, labelWidth: number, unit: string): EChartsCoreOption {
  const h = head(title, false);
  return {
    animation: false,
    title: h.title,
    tooltip: { ...tooltip(unit), axisPointer: { type: 'shadow' } },
    grid: { left: labelWidth, right: 16, top: h.top + 6, bottom: 24 },
    xAxis: { type: 'value', ...axis },
    yAxis: { type: 'category', inverse: true, data: labels, axisLabel: { color: MUTED } },
    series: [{ type: 'bar', data: values, itemStyle: { color } }],
  };
}

/** The named phases' total per step, in ms. */
export function phaseTotalMs(phasesMs: Readonly<Record<string, number>>): number {
  return PHASE_NAMES.reduce((a, n) => a + (phasesMs[n] ?? 0), 0);
}

/** The step's phases in the order they happen (data first), each with its share of the named phases' total. */
export function phaseBarsOption(phasesMs: Readonly<Record<string, number>>): EChartsCoreOption {
  const total = phaseTotalMs(phasesMs);
  const labels = PHASE_NAMES.map((n) => `${n} ${total > 0 ? Math.round((100 * (phasesMs[n] ?? 0)) / total) : 0}%`);
  return bars(`Time per step by phase: ${formatValue(total, 'ms')} in all`, labels, PHASE_NAMES.map((n) => Number((phasesMs[n] ?? 0).toFixed(3))), '#4fb3ff', 96, 'ms');
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
