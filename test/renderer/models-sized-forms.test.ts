// @vitest-environment happy-dom
// Issue 27 item 1 in the forms: the model select value of a family sized to the chosen dataset becomes a spec
// (or the reason there is none), and the Optimise wizard runs on an imported CSV with it, to the end.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { createPinia, setActivePinia } from 'pinia';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import type { BuildResult, DatasetSummary } from '../../src-main/api/datasets';
import type { ModelEntry } from '../../src-main/api/model-files';
import type { Services } from '../../src-main/core/services';
import { applyQuery, newRunValuesFromQuery, unchoosableModel } from '../../src-renderer/components/optimise/apply-values';
import { useOptimiseStore } from '../../src-renderer/stores/optimise';
import { resolveModelChoice, sizedSpecOf } from '../../src-renderer/view-models/model-choice';
import { optimiseFormValues, optimiseRequest } from '../../src-renderer/view-models/optimise-form';
import { testServices } from '../helpers/services';
import { installServicesClient } from './services-client';

let services: Services;
let cleanup: () => Promise<void>;
let dataset: DatasetSummary;

beforeAll(async () => {
  ({ services, cleanup } = await testServices());
  const rows = ['a,b,c,d,kind'];
  for (let i = 0; i < 400; i++) rows.push(`${(i % 7) / 7},${(i % 5) / 5},${(i % 3) / 3},${(i % 11) / 11},${i % 3}`);
  mkdirSync(path.join(services.workspace.root, 'sources'), { recursive: true });
  writeFileSync(path.join(services.workspace.root, 'sources', 'kinds.csv'), rows.join('\n') + '\n');
  const built = (await services.router.dispatch('datasets.build', { source: { kind: 'csv', path: 'sources/kinds.csv', label: 'kind' }, name: 'kinds' })) as BuildResult;
  dataset = built.dataset;
}, 60_000);
afterAll(async () => cleanup?.());
beforeEach(() => setActivePinia(createPinia()));

describe('a sized model in the forms', () => {
  it('is sized to the chosen dataset, or says why not', () => {
    const data = `dataset:${dataset.id}`;
    expect(sizedSpecOf('mlp', data, [dataset])).toBeNull();
    expect(sizedSpecOf('sized:mlp', data, [dataset])).toMatchObject({ spec: { family: 'mlp', input: [4], outputs: 3 } });
    expect(sizedSpecOf('sized:cnn', data, [dataset])).toEqual({ problem: "cnn does not fit kinds: field 'x' has shape [4] per record, not an image ([channels, height, width] or [height, width])" });
    expect(sizedSpecOf('sized:mlp', 'fashion-mnist', [dataset])).toMatchObject({ problem: expect.stringMatching(/needs a dataset of the workspace/) });
  });

  it("refuses an Optimise request for a model that is not a built-in without its spec, naming the model field", () => {
    const v = optimiseFormValues('sized:mlp', { data: `dataset:${dataset.id}`, device: 'cpu' });
    expect(optimiseRequest(v).errors).toEqual({ model: 'sized:mlp has not been read yet, or it is not a usable model spec' });
  });

  it('runs the Optimise wizard on an imported CSV with the mlp sized to it', async () => {
    installServicesClient(services);
    const store = useOptimiseStore();
    store.form = {
      ...optimiseFormValues('sized:mlp', { data: `dataset:${dataset.id}`, device: 'cpu' }),
      loaderWorkers: 0, prefetch: 1, threads: 1, repeat: 2, maxTrials: 1, steps: 5, warmupSteps: 1, minWindowSeconds: 0, batchSearch: false, batchSize: 32,
    };
    const resolved = await resolveModelChoice(store.form.model, store.form.data, [dataset]);
    expect('spec' in resolved && resolved.spec).toMatchObject({ family: 'mlp', input: [4], outputs: 3 });
    await store.start('spec' in resolved ? resolved.spec : null);
    expect(store.error).toBeNull();
    expect(store.result?.status).toBe('completed');
    expect(store.state?.request.target.spec).toMatchObject({ family: 'mlp', input: [4], outputs: 3 });
    expect(store.state?.baseline?.repetitions).toHaveLength(2);

    // Apply finds the wizard's model among the form's choices again: the family sized to the data, then
    // the same spec saved as a file; a spec no choice gives (a file changed since) says how to apply it.
    const target = store.state!.request.target;
    const config = store.state!.final!.config;
    const list = async () => (await services.router.dispatch('models.list', {})) as ModelEntry[];
    const sized = applyQuery('opt-sized', target, config, { datasets: [dataset], models: await list() });
    expect(sized.query).toMatchObject({ model: 'sized:mlp', data: `dataset:${dataset.id}`, batchSize: '32' });
    const back = newRunValuesFromQuery(sized.query!)!;
    expect(back.notes).toEqual([]);
    expect(back.values).toMatchObject({ model: 'sized:mlp', data: `dataset:${dataset.id}`, batchSize: 32, optimizer: 'adamw', lr: 0.002 }); // the mlp recipe

    await services.router.dispatch('models.save', { name: 'kinds-mlp.json', spec: target.spec });
    const other = { ...target, data: { kind: 'fashion-mnist' as const } }; // not sized to this: only the file gives it
    const file = applyQuery('opt-file', other, config, { datasets: [dataset], models: await list() });
    expect(file.query).toMatchObject({ model: 'models/kinds-mlp.json', family: 'mlp', data: 'fashion-mnist' });
    expect(newRunValuesFromQuery(file.query!)?.values).toMatchObject({ model: 'models/kinds-mlp.json', batchSize: 32, lr: 0.002 });

    const changed = { ...other, spec: { ...target.spec, hidden: [7] } as typeof target.spec };
    expect(applyQuery('opt-own', changed, config, { datasets: [dataset], models: await list() })).toEqual({ query: null, blocked: unchoosableModel(changed.spec) });
    expect(unchoosableModel(changed.spec)).toMatch(/^the model \(its own mlp spec\) is neither a built-in, its family sized to this data, nor a spec file of the workspace now: save it under models\//);
  }, 120_000);
});
