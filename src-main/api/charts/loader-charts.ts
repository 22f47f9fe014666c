// The loader benchmark's chart: samples/s per worker count, cached beside the source read in place.
import type { EChartsCoreOption } from 'echarts/core';

import type { LoaderBenchResult } from '../datasets';
import { formatValue, GRID_LINE, MUTED, TEXT, tooltip } from './theme';

type LoaderInput = Pick<LoaderBenchResult, 'cached' | 'uncached'>;

export function loaderBenchOption(r: LoaderInput): EChartsCoreOption {
  const labels = r.cached.map((x) => `${x.workers} worker${x.workers === 1 ? '' : 's'}`);
  const series = [{ name: 'cached', type: 'bar', data: r.cached.map((x) => Math.round(x.samplesPerSec)), itemStyle: { color: '#4fb3ff' } }];
  if (r.uncached) series.push({ name: 'uncached (source files)', type: 'bar', data: r.uncached.map((x) => Math.round(x.samplesPerSec)), itemStyle: { color: '#d29922' } });
  return {
    animation: false,
    legend: { textStyle: { color: TEXT }, top: 0 },
    tooltip: { ...tooltip('samples/s'), axisPointer: { type: 'shadow' } },
    grid: { left: 70, right: 16, top: 36, bottom: 28 },
    xAxis: { type: 'category', data: labels, axisLabel: { color: MUTED } },
    yAxis: { type: 'value', name: 'samples/s', axisLabel: { color: MUTED }, splitLine: { lineStyle: { color: GRID_LINE } } },
    series,
  };
}

export function loaderBenchLabel(r: LoaderInput): string {
  const row = (name: string, xs: { workers: number; samplesPerSec: number }[]) => `${name}: ${xs.map((x) => `${x.workers} workers ${formatValue(x.samplesPerSec, 'samples/s')}`).join(', ')}`;
  return `Loader throughput chart. ${row('cached', r.cached)}${r.uncached ? `. ${row('uncached', r.uncached)}` : ''}`;
}
