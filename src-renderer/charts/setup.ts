// Registers only the ECharts parts we use, so the bundle stays small.
import { BarChart, LineChart, ScatterChart } from 'echarts/charts';
import { GridComponent, LegendComponent, MarkLineComponent, TitleComponent, TooltipComponent } from 'echarts/components';
import { use } from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';

// Scatter: failed batches on the batch axis; mark lines: a GPU's usable memory, a noise floor.
use([LineChart, BarChart, ScatterChart, GridComponent, LegendComponent, MarkLineComponent, TitleComponent, TooltipComponent, CanvasRenderer]);
