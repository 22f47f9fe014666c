import type { RunDetail, RunSummary } from '@api/training';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { errorText } from './error-text';
import { useApiClient } from '../transport/client-instance';

/** Runs recorded in the workspace (training and benchmarks), newest first. */
export const useRunsStore = defineStore('runs', () => {
  const list = shallowRef<RunSummary[]>([]);
  /** The run whose details are shown. */
  const selected = shallowRef<RunDetail | null>(null);
  const loading = ref(false);
  const error = ref<string | null>(null);

  async function refresh(): Promise<void> {
    loading.value = true;
    error.value = null;
    try {
      list.value = await useApiClient().call('runs.list', {});
    } catch (err) {
      error.value = errorText(err);
    } finally {
      loading.value = false;
    }
  }

  async function open(id: string): Promise<void> {
    error.value = null;
    try {
      selected.value = await useApiClient().call('runs.get', { id });
    } catch (err) {
      error.value = errorText(err);
    }
  }

  return { list, selected, loading, error, refresh, open };
});
