import { createRouter, createWebHashHistory, type RouteRecordRaw } from 'vue-router';

import { areas } from './areas';
import AreaView from './views/AreaView.vue';
import BatchSizeView from './views/BatchSizeView.vue';
import BenchmarksView from './views/BenchmarksView.vue';
import DashboardView from './views/DashboardView.vue';
import DatasetsView from './views/DatasetsView.vue';
import OptimiseView from './views/OptimiseView.vue';
import RunsView from './views/RunsView.vue';
import ReportsView from './views/ReportsView.vue';

const views: Record<string, RouteRecordRaw['component']> = {
  dashboard: DashboardView,
  datasets: DatasetsView,
  benchmarks: BenchmarksView,
  'batch-size': BatchSizeView,
  runs: RunsView,
  reports: ReportsView,
  optimise: OptimiseView,
};

const routes: RouteRecordRaw[] = areas.map((area) =>
  views[area.name]
    ? ({ path: area.path, name: area.name, component: views[area.name] } as RouteRecordRaw)
    : { path: area.path, name: area.name, component: AreaView, props: { area } },
);

// Hash history: works from file:// in Electron and needs no server fallback.
export function createAppRouter() {
  return createRouter({ history: createWebHashHistory(), routes });
}
