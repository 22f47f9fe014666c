import type { DatasetSummary } from '@api/datasets';
import type { Devices } from '@api/devices';
import type { BuiltinModelName, ModelSpec } from '@api/model-spec';
import { BUILTIN_MODELS, ModelSpecSchema } from '@api/model-spec';
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

/** The built-in model a stored spec is, or null for a spec of the user's own (a JSON file given to the CLI). */
export function builtinModelOf(spec: ModelSpec): BuiltinModelName | null {
  const key = JSON.stringify(spec);
  return (Object.keys(BUILTIN_MODELS) as BuiltinModelName[]).find((m) => JSON.stringify(ModelSpecSchema.parse(BUILTIN_MODELS[m])) === key) ?? null;
}

/** The data select value of a data source (dataSourceOf's inverse), or null when the forms have none for it (files given by path). */
export function dataChoiceOf(data: DataSource): string | null {
  if (data.kind === 'fashion-mnist') return data.dir === undefined ? 'fashion-mnist' : null;
  if (data.kind === 'example-board') return 'example-board';
  if (data.kind === 'dataset') return `dataset:${data.train}`;
  return null;
}
