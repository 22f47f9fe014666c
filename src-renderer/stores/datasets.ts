import type { DatasetSummary } from '@api/datasets';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { errorText } from './error-text';
import { useLoader } from './load-state';
import { useApiClient } from '../transport/client-instance';

/** The dataset caches of the workspace. */
export const useDatasetsStore = defineStore('datasets', () => {
  /** Every cache, with its problem when it does not open. */
  const list = shallowRef<DatasetSummary[]>([]);
  const { loading, error, run: refresh } = useLoader(async () => {
    list.value = await useApiClient().call('datasets.list', {});
  });
  /** Last verify result per dataset id: 'ok' or the problems found. */
  const verified = ref<Record<string, string>>({});

  /** Recomputes every shard's checksum. */
  async function verify(id: string): Promise<void> {
    verified.value = { ...verified.value, [id]: 'checking…' };
    try {
      const r = await useApiClient().call('datasets.verify', { id });
      verified.value = { ...verified.value, [id]: r.ok ? `ok (${r.seconds.toFixed(1)} s)` : r.problems.join('; ') };
    } catch (err) {
      verified.value = { ...verified.value, [id]: errorText(err) };
    }
  }

  async function remove(id: string): Promise<void> {
    let failure: string | null = null;
    try {
      await useApiClient().call('datasets.remove', { id });
    } catch (err) {
      failure = errorText(err);
    }
    await refresh();
    // The refresh clears the error; a failed remove must stay on screen.
    if (failure) error.value = failure;
  }

  return { list, loading, error, verified, refresh, verify, remove };
});
