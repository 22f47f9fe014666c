// The batch-size search's chart: samples/s and memory (predicted beside measured) by batch size.
import type { EChartsCoreOption } from 'echarts/core';

import type { BatchTrial } from '../batch-size';
import { failedBatchSeries, failedBatchText } from './failed-batches';
import { formatValue, GRID_LINE, MUTED, TEXT, tooltip } from './theme';
import { usableMemoryLine } from './usable-memory-line';

const MiB = 2 ** 20;

type TrialInput = Pick<BatchTrial, 'batchSize' | 'accumulation' | 'outcome' | 'samplesPerSec' | 'peakBytes' | 'predicted'>;

/** Single-batch trials (no accumulation), smallest first; the chart's x axis. */
function singles(trials: readonly TrialInput[]): TrialInput[] {
  return trials.filter((t) => t.accumulation === 1).sort((a, b) => a.batchSize - b.batchSize);
}

export function batchSizeOption(trials: readonly TrialInput[], usableBytes: number | null): EChartsCoreOption {
  const single = singles(trials);
  const ok = single.filter((t) => t.outcome === 'ok');
  const axis = { axisLabel: { color: MUTED }, splitLine: { lineStyle: { color: GRID_LINE } } };
  return {
    animation: false,
    // Under the plot, on its own line: at the top it crowded the two axis names.
    legend: { textStyle: { color: TEXT }, bottom: 0, itemWidth: 14, itemHeight: 8 },
    // The series names carry their units (samples/s, MiB): the tooltip only rounds.
    tooltip: tooltip(''),
    grid: { left: 70, right: 70, top: 32, bottom: 64 },
    xAxis: { type: 'value', name: 'batch', nameLocation: 'middle', nameGap: 26, min: 0, ...axis },
    yAxis: [
      { type: 'value', name: 'samples/s', ...axis },
      { type: 'value', name: 'MiB', ...axis, splitLine: { show: false } },
    ],
    series: [
      { name: 'samples/s', type: 'line', data: ok.map((t) => [t.batchSize, Math.round(t.samplesPerSec ?? 0)]), itemStyle: { color: '#4fb3ff' } },
      {
        name: 'predicted MiB',
        type: 'line',
        yAxisIndex: 1,
        lineStyle: { type: 'dashed' },
        data: single.map((t) => [t.batchSize, +(t.predicted.total / MiB).toFixed(1)]),
        itemStyle: { color: '#d29922' },
        ...usableMemoryLine(usableBytes),
      },
      { name: 'measured MiB', type: 'line', yAxisIndex: 1, data: ok.map((t) => [t.batchSize, +((t.peakBytes ?? 0) / MiB).toFixed(1)]), itemStyle: { color: '#3fb950' } },
      ...failedBatchSeries(single),
    ],
  };
}

export function batchSizeLabel(trials: readonly TrialInput[]): string {
  const ok = singles(trials).filter((t) => t.outcome === 'ok');
  const points = ok.map((t) => `batch ${t.batchSize}: ${formatValue(t.samplesPerSec, 'samples/s')}, ${formatValue((t.peakBytes ?? 0) / MiB, 'MiB')}`);
  const parts = [...points, ...failedBatchText(singles(trials))];
  return `Throughput and memory by batch size chart${parts.length ? `: ${parts.join('; ')}` : ', no trial fitted yet'}`;
}
