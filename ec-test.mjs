import * as echarts from 'echarts/core';
import { BarChart, LineChart } from 'echarts/charts';
import { GridComponent, LegendComponent, TitleComponent, TooltipComponent } from 'echarts/components';
import { SVGRenderer } from 'echarts/renderers';
echarts.use([LineChart, BarChart, GridComponent, LegendComponent, TitleComponent, TooltipComponent, SVGRenderer]);
const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: 400, height: 200 });
const option = {
  animation: false,
  title: { text: 'x', left: 8, top: 4 },
  legend: { show: true, right: 8, top: 4 },
  tooltip: { trigger: 'axis' },
  grid: { left: 52, right: 12, top: 32, bottom: 24 },
  xAxis: { type: 'time' },
  yAxis: { type: 'value', min: 0, max: undefined, name: '%' },
  series: [{ name: 'a', type: 'line', showSymbol: false, sampling: 'lttb', connectNulls: false, lineStyle: { width: 1.5, type: 'solid', color: undefined }, itemStyle: undefined, data: [] }],
};
try { chart.setOption(option); console.log('init ok'); } catch (e) { console.log('init err', e.message); }
try { chart.setOption({ xAxis: { min: 1000, max: 2000 }, series: [{ data: [[1500, 3]] }] }); console.log('update ok'); } catch (e) { console.log('update err', e.message, e.stack.split('\n').slice(1,4).join(' | ')); }
