// Chart options for training benchmarks side by side: pure functions of the
// results, so the Benchmarks area and the report generator draw the same charts.
import type { EChartsCoreOption } from 'echarts/core';

import type { BenchmarkPhases } from '../benchmark';
import { PHASE_NAMES_WITH_OTHER } from '../benchmark';
import type { BenchmarkResult } from '../benchmark-result';
import { intervalLevel, intervalLevels } from '../order-interval';
import { errorBar } from './error-bar';
import { formatValue, GRID_LINE, MUTED, TEXT, tooltip } from './theme';

const axis = { axisLabel: { color: MUTED }, splitLine: { lineStyle: { color: GRID_LINE } } };
const title = (text: string) => ({ text, left: 8, top: 4, textStyle: { color: TEXT, fontSize: 12, fontWeight: 500 } });

export const PHASE_COLORS: Readonly<Record<string, string>> = {
  data: '#f85149',
  h2d: '#d29922',
  forward: '#4fb3ff',
  loss: '#a371f7',
  backward: '#3fb950',
  optimizer: '#db61a2',
  other: '#6e7681',
};

/** What the charts read of a benchmark result: samples per optimizer step are batch x accumulation. */
export interface BenchmarkChartInput {
  title: string;
  device: string;
  batchSize: number;
  accumulation: number;
  phasesMs: BenchmarkPhases;
  samplesPerSecCi: BenchmarkResult['samplesPerSecCi'];
  stepTime: Pick<BenchmarkResult['stepTime'], 'steadyStateMeanMs'>;
}

/** A benchmark of either target as the charts read it (a script's batch unseen is 0; a script does not accumulate). */
export function chartInputOf(r: Pick<BenchmarkResult, 'title' | 'device' | 'batchSize' | 'phasesMs' | 'samplesPerSecCi' | 'stepTime' | 'target'>): BenchmarkChartInput {
  return { ...r, batchSize: r.batchSize ?? 0, accumulation: r.target.kind === 'engine' ? r.target.accumulation : 1 };
}

/** "1. mlp cpu b64": short enough for an axis, numbered to match the table. */
export function benchmarkLabels(results: readonly BenchmarkChartInput[]): string[] {
  return results.map((r, i) => `${i + 1}. ${r.title.split(' on ')[0]} ${r.device} b${r.batchSize}${r.accumulation > 1 ? `×${r.accumulation}` : ''}`);
}

const round = (x: number) => Number(x.toFixed(4));

/**
 * Stacked phase bars per benchmark. The stack adds up to the steady-state step; its error bar is
 * the samples/s interval as step time (batch x accumulation / samples/s), on the axis the bars use.
 */
export function phaseStackOption(results: readonly BenchmarkChartInput[], labels = benchmarkLabels(results)): EChartsCoreOption {
  return {
    animation: false,
    title: title(`Time per step by phase (ms), ${intervalLevels(results.map((r) => r.samplesPerSecCi))} CI of the step`),
    legend: { bottom: 0, data: [...PHASE_NAMES_WITH_OTHER], textStyle: { color: MUTED } },
    tooltip: { ...tooltip('ms'), axisPointer: { type: 'shadow' } },
    grid: { left: 56, right: 16, top: 44, bottom: 72 },
    xAxis: { type: 'category', data: labels, axisLabel: { color: MUTED, interval: 0, rotate: labels.length > 4 ? 20 : 0 } },
    // The title names the unit: an axis name would sit under the title and collide with it.
    yAxis: { type: 'value', ...axis },
    series: [
      ...PHASE_NAMES_WITH_OTHER.map((p) => ({
        name: p,
        type: 'bar',
        stack: 'step',
        barMaxWidth: 56,
        itemStyle: { color: PHASE_COLORS[p] },
        data: results.map((r) => round(r.phasesMs[p])),
      })),
      {
        name: `${intervalLevels(results.map((r) => r.samplesPerSecCi))} CI`,
        type: 'custom',
        renderItem: errorBar,
        // Both ends count for the axis extent, so a bar's interval is never cut off.
        encode: { x: 0, y: [1, 2] },
        z: 10,
        tooltip: { show: false },
        data: results.map((r, i) => {
          const perStep = 1000 * r.batchSize * r.accumulation;
          return [i, round(perStep / r.samplesPerSecCi.high), round(perStep / r.samplesPerSecCi.low)];
        }),
      },
    ],
  };
}

export function throughputOption(results: readonly BenchmarkChartInput[], labels = benchmarkLabels(results)): EChartsCoreOption {
  return {
    animation: false,
    title: title(`Samples/s: median of the repetitions, ${intervalLevels(results.map((r) => r.samplesPerSecCi))} CI`),
    tooltip: { ...tooltip('samples/s'), axisPointer: { type: 'shadow' } },
    grid: { left: 64, right: 16, top: 44, bottom: 72 },
    xAxis: { type: 'category', data: labels, axisLabel: { color: MUTED, interval: 0, rotate: labels.length > 4 ? 20 : 0 } },
    yAxis: { type: 'value', ...axis },
    series: [
      { name: 'median', type: 'bar', barMaxWidth: 56, itemStyle: { color: '#4fb3ff' }, data: results.map((r) => Math.round(r.samplesPerSecCi.median)) },
      {
        name: `${intervalLevels(results.map((r) => r.samplesPerSecCi))} CI`,
        type: 'custom',
        renderItem: errorBar,
        encode: { x: 0, y: [1, 2] },
        z: 10,
        data: results.map((r, i) => [i, Math.round(r.samplesPerSecCi.low), Math.round(r.samplesPerSecCi.high)]),
      },
    ],
  };
}

/** What a screen reader announces (and a report's alt text says) for each chart. */
export function phaseStackLabel(results: readonly BenchmarkChartInput[], labels = benchmarkLabels(results)): string {
  return `Time per step by phase chart: ${results.map((r, i) => `${labels[i]} ${formatValue(r.stepTime.steadyStateMeanMs, 'ms')}`).join('; ')}`;
}

export function throughputLabel(results: readonly BenchmarkChartInput[], labels = benchmarkLabels(results)): string {
  const one = (r: BenchmarkChartInput, i: number) =>
    `${labels[i]} ${formatValue(r.samplesPerSecCi.median, 'samples/s')} (${intervalLevel(r.samplesPerSecCi)} CI ${formatValue(r.samplesPerSecCi.low)} to ${formatValue(r.samplesPerSecCi.high)})`;
  return `Samples per second chart: ${results.map(one).join('; ')}`;
}
