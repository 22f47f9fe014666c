// The "usable" memory line of the batch-size charts (engine and script): where a fitting batch must stay.
import { MUTED } from './theme';

const MiB = 2 ** 20;

/**
 * A markLine at the usable memory (MiB axis), its label inside the plot above the line's right end:
 * at the end ('end', ECharts' default) it sat on the right axis's tick labels in a narrow chart.
 */
export function usableMemoryLine(usableBytes: number | null): { markLine?: Record<string, unknown> } {
  if (!usableBytes) return {};
  return {
    markLine: {
      symbol: 'none',
      silent: true,
      label: { formatter: 'usable', position: 'insideEndTop', color: MUTED },
      data: [{ yAxis: +(usableBytes / MiB).toFixed(1) }],
    },
  };
}
