import type { DatasetSummary } from '@api/datasets';
import { sizedFamilyOf, sizeModel } from '@api/model-sizing';
import type { ModelSpec } from '@api/model-spec';
import { isBuiltinModel } from '@api/model-spec';

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
