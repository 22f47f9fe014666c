import type { DatasetSummary } from '@api/datasets';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { errorText } from './error-text';
import { useApiClient } from '../transport/client-instance';

/** The dataset caches of the workspace. */
export const useDatasetsStore = defineStore('datasets', () => {
  /** Every cache, with its problem when it does not open. */
  const list = shallowRef<DatasetSummary[]>([]);
  const loading = ref(false);
  const error = ref<string | null>(null);
  /** Last verify result per dataset id: 'ok' or the problems found. */
  const verified = ref<Record<string, string>>({});

  async function refresh(): Promise<void> {
    loading.value = true;
    error.value = null;
    try {
      list.value = await useApiClient().call('datasets.list', {});
    } catch (err) {
      error.value = errorText(err);
    } finally {
      loading.value = false;
    }
  }

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
    try {
      await useApiClient().call('datasets.remove', { id });
    } catch (err) {
      error.value = errorText(err);
    }
    await refresh();
  }

  return { list, loading, error, verified, refresh, verify, remove };
});
