// The batch-size search's chart for a script target: samples/s by batch, the batches that ran out
// of memory (or were killed) marked on the axis, and the CUDA peak where the script used a GPU.
import type { EChartsCoreOption } from 'echarts/core';

import type { ScriptBatchTrial } from '../script-target';
import { failedBatchSeries, failedBatchText } from './failed-batches';
import { formatValue, GRID_LINE, MUTED, TEXT, tooltip } from './theme';
import { usableMemoryLine } from './usable-memory-line';

const MiB = 2 ** 20;

type TrialInput = Pick<ScriptBatchTrial, 'batchSize' | 'outcome' | 'samplesPerSec' | 'cudaPeakBytes'>;

const byBatch = (trials: readonly TrialInput[]) => [...trials].sort((a, b) => a.batchSize - b.batchSize);

/** usableBytes: the CUDA memory a fitting batch may use (total less the headroom); null on the CPU. */
export function scriptBatchSizeOption(trials: readonly TrialInput[], usableBytes: number | null): EChartsCoreOption {
  const sorted = byBatch(trials);
  const ok = sorted.filter((t) => t.outcome === 'ok');
  const withPeak = ok.filter((t) => t.cudaPeakBytes !== null);
  const axis = { axisLabel: { color: MUTED }, splitLine: { lineStyle: { color: GRID_LINE } } };
  return {
    animation: false,
    legend: { textStyle: { color: TEXT }, bottom: 0, itemWidth: 14, itemHeight: 8 },
    tooltip: tooltip(''),
    grid: { left: 70, right: 70, top: 32, bottom: 64 },
    xAxis: { type: 'value', name: 'batch', nameLocation: 'middle', nameGap: 26, min: 0, ...axis },
    // The MiB axis only where the script used CUDA: on the CPU there is no peak to plot.
    yAxis: [{ type: 'value', name: 'samples/s', min: 0, ...axis }, ...(withPeak.length ? [{ type: 'value', name: 'MiB', ...axis, splitLine: { show: false } }] : [])],
    series: [
      { name: 'samples/s', type: 'line', data: ok.map((t) => [t.batchSize, Math.round(t.samplesPerSec ?? 0)]), itemStyle: { color: '#4fb3ff' } },
      ...failedBatchSeries(sorted),
      ...(withPeak.length
        ? [
            {
              name: 'CUDA peak MiB',
              type: 'line',
              yAxisIndex: 1,
              data: withPeak.map((t) => [t.batchSize, +((t.cudaPeakBytes ?? 0) / MiB).toFixed(1)]),
              itemStyle: { color: '#3fb950' },
              ...usableMemoryLine(usableBytes),
            },
          ]
        : []),
    ],
  };
}

export function scriptBatchSizeLabel(trials: readonly TrialInput[]): string {
  const sorted = byBatch(trials);
  const ok = sorted.filter((t) => t.outcome === 'ok').map((t) => `batch ${t.batchSize}: ${formatValue(t.samplesPerSec, 'samples/s')}`);
  const failed = failedBatchText(sorted);
  const parts = [...ok, ...failed];
  return `Throughput by batch size chart${parts.length ? `: ${parts.join('; ')}` : ', no trial finished yet'}`;
}
