// @vitest-environment happy-dom
// Found walking the UI (UI round 4): importing again under a dataset's name replaced it, and took its held-out test
// set with it (its rows would be in the new training data), without a word before the build. The Import wizard now
// says, beside the name, what a build under it replaces.
import { flushPromises, mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { describe, expect, it } from 'vitest';

import type { DatasetSummary, InspectResult } from '../../src-main/api/datasets';
import ImportWizard from '../../src-renderer/components/datasets/ImportWizard.vue';
import { useDatasetsStore } from '../../src-renderer/stores/datasets';
import { installFakeClient, ok } from './fake-client';

const inspected: InspectResult = {
  description: 'a CSV',
  records: 200,
  fields: [
    { name: 'x', dtype: 'float32', shape: [2] },
    { name: 'y', dtype: 'int32', shape: [] },
  ],
  preview: [{ x: [1, 2], y: [0] }],
  uncached: { available: true, reason: null },
};
const summary = (name: string, records: number, split?: DatasetSummary['split']): DatasetSummary => ({
  id: `${name}-0123456789ab`,
  name,
  records,
  bytes: records * 12,
  shards: 1,
  fields: [],
  createdAt: '2026-12-05T01:30:00.000Z',
  sourceDescription: 'sources/small.csv',
  problem: null,
  ...(split ? { split } : {}),
});
const held = { fraction: 0.2, seed: 0, sourceRecords: 200 };
const list = [summary('small', 160, { part: 'train', other: 'small-test-0123456789ab', ...held }), summary('small-test', 40, { part: 'test', other: 'small-0123456789ab', ...held }), summary('other', 50)];

describe('the Import wizard, under the name of a dataset already there', () => {
  it('says the build replaces it and its held-out test set; another name, nothing', async () => {
    const pinia = createPinia();
    setActivePinia(pinia);
    installFakeClient((method) => {
      if (method === 'files.list') return ok({ dir: 'sources', entries: [{ name: 'small.csv', path: 'sources/small.csv', kind: 'file', bytes: 10 }], omitted: 0, omittedAtLeast: false });
      if (method === 'datasets.csvHeader') return ok({ path: 'sources/small.csv', columns: ['a', 'b', 'y'], suggestedLabel: 'y' });
      if (method === 'datasets.inspect') return ok(inspected);
      if (method === 'datasets.list') return ok(list);
      return ok(null);
    });
    await useDatasetsStore().refresh();
    const w = mount(ImportWizard, { global: { plugins: [pinia], stubs: { SourceUpload: true } } });
    await flushPromises();
    await w.get('[data-testid="file-chooser"] button[data-testid]').trigger('click');
    await flushPromises();
    await w.get('[data-testid="inspect"]').trigger('click');
    await flushPromises();
    await w.get('[data-testid="dataset-name"]').setValue('small');
    expect(w.get('[data-testid="name-replaces"]').text()).toBe(
      'A dataset named small is in the workspace (160 records, built 2026-12-05): building replaces it, and its held-out test set small-test with it, unless the source and settings are the same. Choose another name to keep both.',
    );
    await w.get('[data-testid="dataset-name"]').setValue('other');
    expect(w.get('[data-testid="name-replaces"]').text()).toMatch(/^A dataset named other is in the workspace \(50 records, built 2026-12-05\): building replaces it, unless/);
    await w.get('[data-testid="dataset-name"]').setValue('new-one');
    expect(w.find('[data-testid="name-replaces"]').exists()).toBe(false);
  });
});
