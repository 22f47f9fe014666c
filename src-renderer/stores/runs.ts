import type { ModelEntry } from '@api/model-files';
import type { RunDetail, RunSummary } from '@api/training';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { errorText } from './error-text';
import { useLoader } from './load-state';
import { useApiClient } from '../transport/client-instance';

/** Runs recorded in the workspace (training and benchmarks), newest first. */
export const useRunsStore = defineStore('runs', () => {
  const list = shallowRef<RunSummary[]>([]);
  /** The run whose details are shown. */
  const selected = shallowRef<RunDetail | null>(null);
  /** Ids ticked for Compare, in the order they were ticked. */
  const picked = ref<string[]>([]);
  /** The picked runs' details, once compare() has loaded them. */
  const compared = shallowRef<RunDetail[]>([]);
  /** Models the New run form offers: built-ins and the workspace's spec files. */
  const models = shallowRef<ModelEntry[]>([]);
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

  /** The models list; a failure leaves the built-ins the form always offers, and says why. */
  async function loadModels(): Promise<void> {
    try {
      models.value = await useApiClient().call('models.list', {});
    } catch (err) {
      error.value = `cannot list the workspace's model spec files: ${errorText(err)}`;
    }
  }

  function togglePick(id: string): void {
    picked.value = picked.value.includes(id) ? picked.value.filter((x) => x !== id) : [...picked.value, id];
  }

  /** Loads every picked run (two at least) for the Compare panel. */
  async function compare(): Promise<void> {
    error.value = null;
    if (picked.value.length < 2) {
      error.value = `pick at least two runs to compare (${picked.value.length} picked)`;
      return;
    }
    try {
      const client = useApiClient();
      compared.value = await Promise.all(picked.value.map((id) => client.call('runs.get', { id })));
    } catch (err) {
      error.value = errorText(err);
    }
  }

  function closeCompare(): void {
    compared.value = [];
  }

  return { list, selected, picked, compared, models, loading, error, refresh, open, loadModels, togglePick, compare, closeCompare };
});
