import type { Devices, EngineVersion } from '@api/devices';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';
import { errorText } from './error-text';

/** What the engine can run on, as the engine host reports it. */
export const useDevicesStore = defineStore('devices', () => {
  /** The engine's devices() answer, null until loaded. */
  const devices = shallowRef<Devices | null>(null);
  /** Engine build information. */
  const version = shallowRef<EngineVersion | null>(null);
  const loading = ref(false);
  /** A message a person can act on, with the error code. */
  const error = ref<string | null>(null);

  /** Asks the engine host again (e.g. after plugging in a GPU or restarting the driver). */
  async function refresh(): Promise<void> {
    loading.value = true;
    error.value = null;
    try {
      const client = useApiClient();
      const [d, v] = await Promise.all([client.call('engine.devices', {}), client.call('engine.version', {})]);
      devices.value = d;
      version.value = v;
    } catch (err) {
      error.value = errorText(err);
    } finally {
      loading.value = false;
    }
  }

  return { devices, version, loading, error, refresh };
});
