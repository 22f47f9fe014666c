// Charts to SVG text with ECharts' server-side renderer, from the app's own option builders.
import * as echarts from 'echarts';
import type { EChartsCoreOption } from 'echarts/core';

/** The app's panel colour: the charts' light text and lines are drawn for a dark background. */
export const FIGURE_BACKGROUND = '#0d1117';
export const FIGURE_WIDTH = 760;
export const FIGURE_HEIGHT = 360;

/** One chart as a standalone SVG document (no animation, fixed size, the dark background painted in). */
export function renderSvg(option: EChartsCoreOption, width = FIGURE_WIDTH, height = FIGURE_HEIGHT): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    chart.setOption({ ...option, animation: false, backgroundColor: FIGURE_BACKGROUND });
    const svg = chart.renderToSVGString();
    return svg.startsWith('<?xml') ? svg : `<?xml version="1.0" encoding="UTF-8"?>\n${svg}\n`;
  } finally {
    chart.dispose();
  }
}
