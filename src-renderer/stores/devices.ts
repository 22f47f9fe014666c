import type { Devices, EngineVersion } from '@api/devices';
import { defineStore } from 'pinia';
import { shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';
import { useLoader } from './load-state';

/** What the engine can run on, as the engine host reports it. */
export const useDevicesStore = defineStore('devices', () => {
  /** The engine's devices() answer, null until loaded. */
  const devices = shallowRef<Devices | null>(null);
  /** Engine build information. */
  const version = shallowRef<EngineVersion | null>(null);
  /** refresh() asks the engine host again (e.g. after plugging in a GPU or restarting the driver). */
  const { loading, error, run: refresh } = useLoader(async () => {
    const client = useApiClient();
    const [d, v] = await Promise.all([client.call('engine.devices', {}), client.call('engine.version', {})]);
    devices.value = d;
    version.value = v;
  });

  return { devices, version, loading, error, refresh };
});
