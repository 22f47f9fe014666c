import { createRouter, createWebHashHistory, type RouteRecordRaw } from 'vue-router';

import { areas } from './areas';
import AreaView from './views/AreaView.vue';
import DashboardView from './views/DashboardView.vue';

const routes: RouteRecordRaw[] = areas.map((area) =>
  area.name === 'dashboard'
    ? { path: area.path, name: area.name, component: DashboardView }
    : { path: area.path, name: area.name, component: AreaView, props: { area } },
);

// Hash history: works from file:// in Electron and needs no server fallback.
export function createAppRouter() {
  return createRouter({ history: createWebHashHistory(), routes });
}
