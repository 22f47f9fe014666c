import type { RunDetail, RunSummary } from '@api/training';
import { defineStore } from 'pinia';
import { shallowRef } from 'vue';

import { errorText } from './error-text';
import { useLoader } from './load-state';
import { useApiClient } from '../transport/client-instance';

/** Runs recorded in the workspace (training and benchmarks), newest first. */
export const useRunsStore = defineStore('runs', () => {
  const list = shallowRef<RunSummary[]>([]);
  /** The run whose details are shown. */
  const selected = shallowRef<RunDetail | null>(null);
  const { loading, error, run: refresh } = useLoader(async () => {
    list.value = await useApiClient().call('runs.list', {});
  });

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
