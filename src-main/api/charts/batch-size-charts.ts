// The batch-size search's chart, either target: samples/s by batch, the batches that ran out of memory
// (or were killed) marked on the axis, and memory: the engine's prediction beside its measurement, or a
// script's CUDA peak where it used a GPU (on the CPU a script has no peak to plot).
import type { EChartsCoreOption } from 'echarts/core';

import type { BatchTrial } from '../batch-size';
import { failedBatchSeries, failedBatchText } from './failed-batches';
import { formatValue, GRID_LINE, MUTED, TEXT, tooltip } from './theme';
import { usableMemoryLine } from './usable-memory-line';

const MiB = 2 ** 20;

export type BatchChartTrial = Pick<BatchTrial, 'batchSize' | 'accumulation' | 'outcome' | 'samplesPerSec' | 'peakBytes' | 'target'>;

/** A trial as the chart draws it: the engine's memory model predicted its bytes; a script's were only measured. */
interface Point {
  batchSize: number;
  outcome: BatchTrial['outcome'];
  samplesPerSec: number | null;
  peakBytes: number | null;
  predictedBytes: number | null;
  /** The engine's CPU trials: the process's peak as the OS counted it (its own accounting there repeats the prediction). */
  processPeakBytes: number | null;
}

/** Single-batch trials (no accumulation), smallest first: the chart's x axis. */
function points(trials: readonly BatchChartTrial[]): Point[] {
  return trials
    .filter((t) => t.accumulation === 1)
    .map((t) => ({
      batchSize: t.batchSize,
      outcome: t.outcome,
      samplesPerSec: t.samplesPerSec,
      peakBytes: t.peakBytes,
      predictedBytes: t.target.kind === 'engine' ? t.target.predicted.total : null,
      processPeakBytes: t.target.kind === 'engine' ? t.target.processPeakRssBytes : null,
    }))
    .sort((a, b) => a.batchSize - b.batchSize);
}

const mib = (bytes: number | null) => +((bytes ?? 0) / MiB).toFixed(1);

/** usableBytes: the memory a fitting batch may use (the capacity less the headroom); null without one (a CPU search without a limit). */
export function batchSizeOption(trials: readonly BatchChartTrial[], usableBytes: number | null): EChartsCoreOption {
  const all = points(trials);
  const ok = all.filter((t) => t.outcome === 'ok');
  const predicted = all.some((t) => t.predictedBytes !== null);
  const measured = predicted ? ok : ok.filter((t) => t.peakBytes !== null);
  const processPeak = ok.some((t) => t.processPeakBytes !== null);
  const memory = predicted || measured.length > 0;
  const axis = { axisLabel: { color: MUTED }, splitLine: { lineStyle: { color: GRID_LINE } } };
  return {
    animation: false,
    // Under the plot, on its own line: at the top it crowded the two axis names.
    legend: { textStyle: { color: TEXT }, bottom: 0, itemWidth: 14, itemHeight: 8 },
    // The series names carry their units (samples/s, MiB): the tooltip only rounds.
    tooltip: tooltip(''),
    grid: { left: 70, right: 70, top: 32, bottom: 64 },
    xAxis: { type: 'value', name: 'batch', nameLocation: 'middle', nameGap: 26, min: 0, ...axis },
    yAxis: [{ type: 'value', name: 'samples/s', ...(predicted ? {} : { min: 0 }), ...axis }, ...(memory ? [{ type: 'value', name: 'MiB', ...axis, splitLine: { show: false } }] : [])],
    series: [
      { name: 'samples/s', type: 'line', data: ok.map((t) => [t.batchSize, Math.round(t.samplesPerSec ?? 0)]), itemStyle: { color: '#4fb3ff' } },
      ...(predicted
        ? [
            {
              name: 'predicted MiB',
              type: 'line',
              yAxisIndex: 1,
              lineStyle: { type: 'dashed' },
              data: all.map((t) => [t.batchSize, mib(t.predictedBytes)]),
              itemStyle: { color: '#d29922' },
              ...usableMemoryLine(usableBytes),
            },
            processPeak
              ? { name: 'process peak MiB', type: 'line', yAxisIndex: 1, data: ok.filter((t) => t.processPeakBytes !== null).map((t) => [t.batchSize, mib(t.processPeakBytes)]), itemStyle: { color: '#3fb950' } }
              : { name: 'measured MiB', type: 'line', yAxisIndex: 1, data: ok.map((t) => [t.batchSize, mib(t.peakBytes)]), itemStyle: { color: '#3fb950' } },
            ...failedBatchSeries(all),
          ]
        : [
            ...failedBatchSeries(all),
            ...(measured.length
              ? [{ name: 'CUDA peak MiB', type: 'line', yAxisIndex: 1, data: measured.map((t) => [t.batchSize, mib(t.peakBytes)]), itemStyle: { color: '#3fb950' }, ...usableMemoryLine(usableBytes) }]
              : []),
          ]),
    ],
  };
}

/** What a screen reader hears for the chart. */
export function batchSizeLabel(trials: readonly BatchChartTrial[]): string {
  const all = points(trials);
  const predicted = all.some((t) => t.predictedBytes !== null);
  const ok = all.filter((t) => t.outcome === 'ok');
  const processPeak = ok.some((t) => t.processPeakBytes !== null);
  const memoryOf = (t: Point) => (processPeak ? `, process peak ${formatValue((t.processPeakBytes ?? 0) / MiB, 'MiB')}` : `, ${formatValue((t.peakBytes ?? 0) / MiB, 'MiB')}`);
  const rows = ok.map((t) => `batch ${t.batchSize}: ${formatValue(t.samplesPerSec, 'samples/s')}${predicted ? memoryOf(t) : ''}`);
  const parts = [...rows, ...failedBatchText(all)];
  const what = predicted ? 'Throughput and memory by batch size chart' : 'Throughput by batch size chart';
  return `${what}${parts.length ? `: ${parts.join('; ')}` : ', no trial finished yet'}`;
}
