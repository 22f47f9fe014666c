// @vitest-environment happy-dom
// Issue 41 item 2 in the renderer: New run's test set (the dataset's held-out split preselected, none said
// plainly, the choice sent as data.test) and the import wizard's held-out split settings, refused with the value named.
import { mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';
import { nextTick, reactive } from 'vue';

import type { DatasetSummary } from '../../src-main/api/datasets';
import NewRunForm from '../../src-renderer/components/runs/NewRunForm.vue';
import type { NewRunValues } from '../../src-renderer/components/runs/new-run-values';
import { defaultTestChoice, newRunValuesOf, recipeValues, testChoices, trainRequest } from '../../src-renderer/components/runs/new-run-values';
import { buildProblem, testSplitProblem, testSplitRequest } from '../../src-renderer/composables/useImportWizard';

const SPECIES = ['setosa', 'versicolor', 'virginica'];

function summary(id: string, name: string, records: number, extra: Partial<DatasetSummary> = {}): DatasetSummary {
  return {
    id,
    name,
    records,
    bytes: records * 20,
    shards: 1,
    fields: [
      { name: 'x', dtype: 'float32', shape: [4], recordBytes: 16, stats: null },
      { name: 'y', dtype: 'int32', shape: [], recordBytes: 4, stats: null, classes: SPECIES },
    ],
    createdAt: '2026-12-03T00:00:00.000Z',
    sourceDescription: 'flowers.csv',
    problem: null,
    ...extra,
  };
}

const split = { fraction: 0.2, seed: 0, sourceRecords: 600 };
const flowers = summary('flowers-aaaaaaaaaaaa', 'flowers', 480, { split: { part: 'train', ...split, other: 'flowers-test-bbbbbbbbbbbb' } });
const flowersTest = summary('flowers-test-bbbbbbbbbbbb', 'flowers-test', 120, { split: { part: 'test', ...split, other: flowers.id } });
const second = summary('second-cccccccccccc', 'second-file', 90);
const plain = summary('plain-dddddddddddd', 'plain', 300);
const wide = summary('wide-eeeeeeeeeeee', 'wide', 50, { fields: [{ name: 'x', dtype: 'float32', shape: [7], recordBytes: 28, stats: null }] });
const LIST = [flowers, flowersTest, second, plain, wide];

describe('the test sets New run offers', () => {
  it('preselects the dataset’s held-out split when it is listed, none otherwise, nothing for the built-in data', () => {
    expect(defaultTestChoice(`dataset:${flowers.id}`, LIST)).toBe(flowersTest.id);
    expect(defaultTestChoice(`dataset:${plain.id}`, LIST)).toBe('');
    // The split's cache removed (cache rm) or damaged: none.
    expect(defaultTestChoice(`dataset:${flowers.id}`, LIST.filter((d) => d !== flowersTest))).toBe('');
    expect(defaultTestChoice(`dataset:${flowers.id}`, [flowers, { ...flowersTest, problem: 'shard-00000.bin is missing' }])).toBe('');
    // Not listed yet: cannot be told.
    expect(defaultTestChoice(`dataset:${flowers.id}`, [])).toBeUndefined();
    expect(defaultTestChoice('fashion-mnist', LIST)).toBeUndefined();
  });

  it('lists the held-out split first, then datasets stored alike; never the training set or one stored otherwise', () => {
    expect(testChoices(`dataset:${flowers.id}`, LIST)).toEqual([
      { value: flowersTest.id, name: 'flowers-test', label: 'held-out 20%: flowers-test (120 records)', heldOut: true },
      { value: second.id, name: 'second-file', label: 'second-file (90 records)', heldOut: false },
      { value: plain.id, name: 'plain', label: 'plain (300 records)', heldOut: false },
    ]);
    expect(testChoices('example-board', LIST)).toEqual([]);
  });

  it('sends the choice as data.test, none as no test, and reads it back from a running job', () => {
    const form: NewRunValues = { ...recipeValues('mlp', { data: `dataset:${plain.id}`, device: 'cpu' }), test: flowersTest.id };
    expect(trainRequest(form).request?.data).toEqual({ kind: 'dataset', train: plain.id, test: flowersTest.id });
    expect(trainRequest({ ...form, test: '' }).request?.data).toEqual({ kind: 'dataset', train: plain.id });
    expect(trainRequest({ ...form, test: undefined }).request?.data).toEqual({ kind: 'dataset', train: plain.id });
    // The built-in data bring their own test set: a test choice left over is not sent.
    expect(trainRequest({ ...form, data: 'fashion-mnist' }).request?.data).toEqual({ kind: 'fashion-mnist' });
    // A bad id is named next to the field.
    expect(trainRequest({ ...form, test: '../x' }).errors?.test).toMatch(/^ids are letters, digits.* \("\.\.\/x" given\)$/);

    const request = trainRequest(form).request!;
    const choices = { datasets: LIST, models: [] };
    expect(newRunValuesOf(request, choices, form).test).toBe(flowersTest.id);
    expect(newRunValuesOf({ ...request, data: { kind: 'dataset', train: plain.id } }, choices, form).test).toBe('');
    expect(newRunValuesOf({ ...request, data: { kind: 'fashion-mnist' } }, choices, form).test).toBeUndefined();
  });
});

describe('the New run form’s test set', () => {
  beforeEach(() => setActivePinia(createPinia()));

  function mountForm(values: NewRunValues, datasets: DatasetSummary[] = LIST) {
    const form = reactive(values);
    const w = mount(NewRunForm, { props: { modelValue: form, devices: null, datasets, modelEntries: [], disabled: false, errors: {} } });
    return { w, form };
  }
  const select = (w: ReturnType<typeof mountForm>['w']) => w.get<HTMLSelectElement>('[data-testid="newrun-test"]');

  it('takes the held-out split when the dataset is chosen, and says plainly when there is none', async () => {
    const { w, form } = mountForm(recipeValues('mlp', { data: 'fashion-mnist', device: 'cpu' }));
    expect(select(w).element.disabled).toBe(true);
    expect(select(w).text()).toBe("Fashion-MNIST's test images");
    expect(w.find('[data-testid="newrun-no-test"]').exists()).toBe(false);

    await w.get('[data-testid="newrun-data"]').setValue(`dataset:${flowers.id}`);
    await nextTick();
    expect(form.test).toBe(flowersTest.id);
    expect(select(w).element.value).toBe(flowersTest.id);
    expect(w.find('[data-testid="newrun-no-test"]').exists()).toBe(false);

    await select(w).setValue('');
    expect(form.test).toBe('');
    expect(w.get('[data-testid="newrun-no-test"]').text()).toMatch(/^No test set: this run will report accuracy only on the rows it trains on, .* Choose flowers-test, held out when the dataset was imported, to measure that\.$/);

    // Another dataset: its own default again (none for one imported whole), with the way to get one.
    await w.get('[data-testid="newrun-data"]').setValue(`dataset:${plain.id}`);
    await nextTick();
    expect(form.test).toBe('');
    expect(w.get('[data-testid="newrun-no-test"]').text()).toMatch(/Import the data again with a held-out test split \(Datasets, step 2\), or import a test file and choose it here\.$/);
  });

  it('waits for the datasets to be listed, and keeps the test set a running job brought', async () => {
    const { w, form } = mountForm(recipeValues('mlp', { data: `dataset:${flowers.id}`, device: 'cpu' }), []);
    await nextTick();
    expect(form.test).toBeUndefined();
    await w.setProps({ datasets: LIST });
    await nextTick();
    expect(form.test).toBe(flowersTest.id);

    // A re-attached run's values: its data and its test set arrive together, and the test set stays.
    Object.assign(form, { data: `dataset:${plain.id}`, test: second.id });
    await nextTick();
    await nextTick();
    expect(form.test).toBe(second.id);
    expect(select(w).element.value).toBe(second.id);
  });
});

describe('the import wizard’s held-out split', () => {
  const settings = { name: 'flowers', shardMiB: 1024, sampleRatio: 1, mapping: [] };

  it('asks for nothing when off, and for fraction percent / 100 with the seed when on', () => {
    expect(testSplitProblem({ on: false, percent: 90, seed: -1 })).toBeNull();
    expect(testSplitRequest({ on: false, percent: 20, seed: 0 })).toBeUndefined();
    expect(testSplitRequest({ on: true, percent: 20, seed: 3 })).toEqual({ fraction: 0.2, seed: 3 });
    expect(buildProblem({ ...settings, testSplit: { on: true, percent: 50, seed: 0 } })).toBeNull();
  });

  it('names a bad share or seed as typed', () => {
    expect(buildProblem({ ...settings, testSplit: { on: true, percent: 70, seed: 0 } })).toBe('Test split 70%: hold out more than 0% and at most 50% of the rows (e.g. 20).');
    expect(testSplitProblem({ on: true, percent: 0, seed: 0 })).toBe('Test split 0%: hold out more than 0% and at most 50% of the rows (e.g. 20).');
    expect(testSplitProblem({ on: true, percent: '' as unknown as number, seed: 0 })).toBe('Test split: give the share of the rows to hold out, more than 0% and at most 50% (e.g. 20).');
    expect(testSplitProblem({ on: true, percent: 20, seed: -2 })).toBe('Split seed -2: a whole number from 0 to 4294967295.');
    expect(testSplitProblem({ on: true, percent: 20, seed: 0.5 })).toBe('Split seed 0.5: a whole number from 0 to 4294967295.');
    expect(testSplitProblem({ on: true, percent: 20, seed: '' as unknown as number })).toBe('Split seed (empty): a whole number from 0 to 4294967295.');
  });
});
