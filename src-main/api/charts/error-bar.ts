import type { CustomSeriesRenderItemAPI, CustomSeriesRenderItemParams, CustomSeriesRenderItemReturn } from 'echarts';

import { TEXT } from './theme';

/**
 * A custom series' item: a vertical bar from value 1 to value 2 at category value 0, with caps.
 * Needs echarts' CustomChart registered wherever it is drawn.
 */
export function errorBar(_params: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI): CustomSeriesRenderItemReturn {
  const x = api.value(0) as number;
  const low = api.coord([x, api.value(1)]);
  const high = api.coord([x, api.value(2)]);
  const cap = ((api.size?.([1, 0]) as number[] | undefined)?.[0] ?? 40) * 0.12;
  const style = { stroke: TEXT, lineWidth: 1.5 };
  return {
    type: 'group',
    children: [
      { type: 'line', shape: { x1: low[0], y1: low[1], x2: high[0], y2: high[1] }, style },
      { type: 'line', shape: { x1: low[0] - cap, y1: low[1], x2: low[0] + cap, y2: low[1] }, style },
      { type: 'line', shape: { x1: high[0] - cap, y1: high[1], x2: high[0] + cap, y2: high[1] }, style },
    ],
  };
}
