import type { AppInfo } from '@api/app-info';
import type { EngineVersion } from '@api/devices';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';
import { useLoader } from './load-state';

/** What the About panel shows: the workbench's build and workspace, and the engine's build. */
export const useAboutStore = defineStore('about', () => {
  /** Whether the About panel is open (the status bar opens it). */
  const open = ref(false);
  /** app.info's answer, null until loaded. */
  const app = shallowRef<AppInfo | null>(null);
  /** engine.version's answer (N-API version, CUDA backend compiled in), null until loaded. */
  const engine = shallowRef<EngineVersion | null>(null);
  /** refresh() reads both again; the panel calls it each time it opens. */
  const { loading, error, run: refresh } = useLoader(async () => {
    const client = useApiClient();
    const [a, e] = await Promise.all([client.call('app.info', {}), client.call('engine.version', {})]);
    app.value = a;
    engine.value = e;
  });

  return { open, app, engine, loading, error, refresh };
});
