import type { DatasetSummary } from '@api/datasets';
import type { ModelEntry } from '@api/model-files';
import { SIZED_PREFIX, sizedFamilyOf, sizeModel } from '@api/model-sizing';
import type { ModelSpec } from '@api/model-spec';
import { isBuiltinModel } from '@api/model-spec';

import { builtinModelOf } from '../composables/useTargetChoices';
import { errorText } from '../stores/error-text';
import { useApiClient } from '../transport/client-instance';

/**
 * The spec of a model select value that is a family sized to the chosen dataset ('sized:<family>' with
 * 'dataset:<id>'), or why there is none; null for any other value (a built-in, a spec file).
 */
export function sizedSpecOf(model: string, data: string, datasets: readonly DatasetSummary[]): { spec: ModelSpec } | { problem: string } | null {
  const family = sizedFamilyOf(model);
  if (!family) return null;
  const dataset = data.startsWith('dataset:') ? datasets.find((d) => `dataset:${d.id}` === data) : undefined;
  if (!dataset) return { problem: `${family} sized to the data needs a dataset of the workspace: choose one, or a built-in model` };
  const sized = sizeModel(family, dataset.fields);
  return sized.spec ? { spec: sized.spec } : { problem: `${family} does not fit ${dataset.name}: ${sized.problem}` };
}

/**
 * The spec a form sends for its model select value: null for a built-in (the form has its own), the family
 * sized to the chosen dataset, or a workspace spec file read through models.readSpec; else why there is none.
 */
export async function resolveModelChoice(model: string, data: string, datasets: readonly DatasetSummary[]): Promise<{ spec: ModelSpec | null } | { problem: string }> {
  if (isBuiltinModel(model)) return { spec: null };
  const sized = sizedSpecOf(model, data, datasets);
  if (sized) return sized;
  try {
    return { spec: (await useApiClient().call('models.readSpec', { path: model })).spec };
  } catch (err) {
    return { problem: errorText(err) };
  }
}

/** A spec's JSON with its keys sorted at every level: two specs are the same model when these are equal. */
function canonical(spec: unknown): string {
  return JSON.stringify(spec, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b))) : value,
  );
}

/** What the forms offer as models now: the workspace's datasets (for the sized models) and the models list (for spec files). */
export interface ModelChoices {
  datasets: readonly DatasetSummary[];
  models: readonly ModelEntry[];
}

/** Why Apply cannot name the model in a form's model list, in words: how to make it choosable. */
export function unchoosableModel(spec: { family: string }): string {
  return `the model (its own ${spec.family} spec) is neither a built-in, its family sized to this data, nor a spec file of the workspace now: save it under models/ (New run's spec editor, or the JSON file the CLI was given) to apply it`;
}

/**
 * The model select value that gives `spec` on `data` again (Apply: a wizard's model back into a form): a
 * built-in's name, its family sized to the dataset ('sized:<family>'), or a usable workspace spec file with
 * the same spec; null when the forms offer none (a spec given to the CLI by path, a file changed since).
 */
export function modelChoiceOf(spec: ModelSpec, data: string, datasets: readonly DatasetSummary[], models: readonly ModelEntry[]): string | null {
  const builtin = builtinModelOf(spec);
  if (builtin) return builtin;
  const key = canonical(spec);
  const sizedValue = `${SIZED_PREFIX}${spec.family}`;
  const sized = sizedSpecOf(sizedValue, data, datasets);
  if (sized && 'spec' in sized && canonical(sized.spec) === key) return sizedValue;
  return models.find((m) => m.source === 'workspace' && m.problem === null && m.spec !== undefined && canonical(m.spec) === key)?.name ?? null;
}
