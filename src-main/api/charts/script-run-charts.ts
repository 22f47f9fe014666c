// Chart options for a script run's curves (live and finished): pure functions of
// its points, so the live view, the run's page and a report draw the same charts.
import type { EChartsCoreOption } from 'echarts/core';

import type { ScriptRunPoint } from '../script-run';
import { formatValue, GRID_LINE, MUTED, titleAndLegend, tooltip } from './theme';

const axis = { axisLabel: { color: MUTED }, splitLine: { lineStyle: { color: GRID_LINE } } };

export type StepPoint = [number, number];

/** The two curves' data: [step, value] pairs, points without a value left out. */
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

/** Samples/s (left axis) and the share of the step blocked on the DataLoader (right axis) over steps. */
export function scriptThroughputOption(rate: readonly StepPoint[] = [], dataWait: readonly StepPoint[] = []): EChartsCoreOption {
  const h = titleAndLegend('Samples/s and data wait over steps', true);
  return {
    animation: false,
    title: h.title,
    legend: h.legend,
    tooltip: tooltip(''),
    grid: { left: 60, right: 52, top: h.gridTop + 8, bottom: 28 },
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

/** The training loss over steps (the scalar the script passed to backward(), mean per point). */
export function scriptLossOption(loss: readonly StepPoint[] = []): EChartsCoreOption {
  const h = titleAndLegend('Training loss', false);
  return {
    animation: false,
    title: h.title,
    tooltip: tooltip(''),
    grid: { left: 60, right: 24, top: h.gridTop + 8, bottom: 28 },
    xAxis: { type: 'value', name: 'step', ...axis },
    yAxis: { type: 'value', scale: true, ...axis },
    series: [{ name: 'loss', type: 'line', showSymbol: false, data: [...loss] }],
  };
}

/** What a screen reader hears for the two charts. */
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
