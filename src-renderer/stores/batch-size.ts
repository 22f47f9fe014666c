import type { BatchSearchResult, BatchTrial } from '@api/batch-size';
import { DEFAULT_HEADROOM } from '@api/batch-size';
import type { BuiltinModelName } from '@api/model-spec';
import { BUILTIN_MODELS } from '@api/model-spec';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';
import { errorText } from './error-text';

/** The form of the Batch size area, in the units a person types. */
export interface BatchSearchForm {
  model: BuiltinModelName;
  data: 'fashion-mnist' | 'example-board';
  device: string;
  /** CPU only: the memory the search may fill, in MiB. */
  memoryLimitMiB: number;
  /** Percent of the memory kept free. */
  headroomPct: number;
  /** Empty: no global batch to keep. */
  globalBatch: number | null;
  stepsPerTrial: number;
}

/** One batch-size search at a time: its trials as they arrive, its answer, and Cancel. */
export const useBatchSizeStore = defineStore('batch-size', () => {
  const form = ref<BatchSearchForm>({
    model: 'cnn',
    data: 'fashion-mnist',
    device: 'cpu',
    memoryLimitMiB: 256,
    headroomPct: Math.round(DEFAULT_HEADROOM * 100),
    globalBatch: null,
    stepsPerTrial: 5,
  });
  /** Trials of the search in progress (or the last one), in the order they ran. */
  const trials = shallowRef<BatchTrial[]>([]);
  const result = shallowRef<BatchSearchResult | null>(null);
  const running = ref(false);
  const error = ref<string | null>(null);
  /** The id the running search was started with, for Cancel and for matching its trial events. */
  const searchId = ref<string | null>(null);

  /** Starts a search and collects its trials live; resolves when it ends (answer, error or cancel). */
  async function start(): Promise<void> {
    if (running.value) return;
    const client = useApiClient();
    const id = `search-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    searchId.value = id;
    trials.value = [];
    result.value = null;
    error.value = null;
    running.value = true;
    const off = client.on('batchSize.trial', (e) => {
      if (e.searchId === id) trials.value = [...trials.value, e.trial];
    });
    const f = form.value;
    const cpu = f.device === 'cpu';
    try {
      result.value = await client.call('batchSize.search', {
        spec: BUILTIN_MODELS[f.model],
        data: { kind: f.data },
        options: { device: f.device, memoryLimitBytes: cpu ? Math.round(f.memoryLimitMiB * 2 ** 20) : 0 },
        headroom: f.headroomPct / 100,
        stepsPerTrial: f.stepsPerTrial,
        ...(f.globalBatch ? { globalBatch: f.globalBatch } : {}),
        searchId: id,
      });
      trials.value = result.value.trials;
    } catch (err) {
      error.value = errorText(err);
    } finally {
      off();
      running.value = false;
    }
  }

  /** Stops the running search at its current trial. */
  async function cancel(): Promise<void> {
    if (!searchId.value || !running.value) return;
    try {
      await useApiClient().call('batchSize.cancel', { searchId: searchId.value });
    } catch (err) {
      error.value = errorText(err);
    }
  }

  return { form, trials, result, running, error, searchId, start, cancel };
});
