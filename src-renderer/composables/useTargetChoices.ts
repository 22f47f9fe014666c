import type { DatasetSummary } from '@api/datasets';
import type { Devices } from '@api/devices';
import { BUILTIN_MODELS } from '@api/model-spec';
import type { DataSource } from '@api/training';
import { computed } from 'vue';

/**
 * The choices of a training target the run forms offer (New run, training
 * benchmark): the built-in models, the CPU and each CUDA device, and the data
 * as one select value ('fashion-mnist', 'example-board' or 'dataset:<id>').
 */
export function useTargetChoices(options: { devices: () => Devices | null; datasets: () => DatasetSummary[] }) {
  const models = Object.keys(BUILTIN_MODELS);
  const deviceChoices = computed(() => ['cpu', ...(options.devices()?.cuda.devices ?? []).map((d) => `cuda:${d.index}`)]);
  const dataChoices = computed(() => [
    { value: 'fashion-mnist', label: 'Fashion-MNIST (Debian package)' },
    { value: 'example-board', label: 'example board positions' },
    ...options
      .datasets()
      .filter((d) => d.problem === null)
      .map((d) => ({ value: `dataset:${d.id}`, label: `${d.name} (${d.records.toLocaleString()} records)` })),
  ]);
  return { models, deviceChoices, dataChoices };
}

/** The contract's data source for a data select value (see useTargetChoices). */
export function dataSourceOf(value: string): DataSource {
  if (value === 'fashion-mnist') return { kind: 'fashion-mnist' };
  if (value === 'example-board') return { kind: 'example-board' };
  return { kind: 'dataset', train: value.slice('dataset:'.length) };
}
