// The test curve beside the train curve: loss and accuracy per epoch, on the
// training set and on the test set, so over-fitting shows as the lines parting.
import type { EChartsCoreOption } from 'echarts/core';

import { colourFor, formatValue, lineSeries, titleAndLegend, tooltip, valueAxis } from './theme';

/** The fields of an epoch event the chart reads. */
export interface EpochPoint {
  epoch: number;
  trainLoss: number;
  trainAccuracy: number | null;
  testLoss?: number;
  testAccuracy?: number | null;
}

export function epochCurvesOption(epochs: readonly EpochPoint[], metric: 'loss' | 'accuracy'): { option: EChartsCoreOption; label: string } {
  const read = (e: EpochPoint, set: 'train' | 'test') =>
    (metric === 'loss' ? (set === 'train' ? e.trainLoss : e.testLoss) : set === 'train' ? e.trainAccuracy : e.testAccuracy) ?? null;
  // A run without a test set (imported data with none held out) draws train alone and says so: a "test" legend
  // with no line under it reads as a chart that failed to draw.
  const tested = epochs.some((e) => read(e, 'test') !== null);
  const sets = tested ? (['train', 'test'] as const) : (['train'] as const);
  const series = sets.map((set, i) => ({
    ...lineSeries(set, colourFor(i), set === 'test'),
    showSymbol: true,
    data: epochs.map((e) => [e.epoch, read(e, set)]).filter((p) => p[1] !== null),
  }));
  const title = `${metric === 'loss' ? 'Loss' : 'Accuracy'} per epoch, ${tested ? 'train and test' : 'train (no test set)'}`;
  const head = titleAndLegend(title, true);
  const lastOf = (set: 'train' | 'test') => formatValue(epochs.length ? read(epochs[epochs.length - 1], set) : null);
  return {
    option: {
      animation: false,
      title: head.title,
      legend: head.legend,
      tooltip: tooltip(''),
      grid: { left: 52, right: 16, top: head.gridTop + 8, bottom: 40 },
      xAxis: valueAxis({ name: 'epoch', nameLocation: 'middle', nameGap: 24, minInterval: 1, min: 1 }),
      yAxis: valueAxis(metric === 'accuracy' ? { min: 0, max: 1 } : { scale: true }),
      series,
    },
    label: `${title} over ${epochs.length} epoch${epochs.length === 1 ? '' : 's'}: last train ${lastOf('train')}${tested ? `, test ${lastOf('test')}` : ''}`,
  };
}
