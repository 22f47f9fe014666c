// @vitest-environment happy-dom
// A folder of thousands of files is listed in part by files.list: the chooser says how many more it holds
// instead of passing the cut in silence, and a folder with nothing left out says nothing of it.
import { flushPromises, mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { describe, expect, it } from 'vitest';

import FileChooser from '../../src-renderer/components/datasets/FileChooser.vue';
import { installFakeClient, ok } from './fake-client';

function chooserAnswering(omitted: number, omittedAtLeast: boolean) {
  setActivePinia(createPinia());
  installFakeClient((method) => (method === 'files.list' ? ok({ dir: 'sources', entries: [{ name: 'a.csv', path: 'sources/a.csv', kind: 'file', bytes: 10 }], omitted, omittedAtLeast }) : ok(null)));
  return mount(FileChooser);
}

describe('the file chooser, on a folder listed in part', () => {
  it('says how many entries were not listed, "at least" when the count stopped', async () => {
    const w = chooserAnswering(1_000_000, true);
    await flushPromises();
    expect(w.get('[data-testid="files-omitted"]').text()).toContain('and at least 1,000,000 more entries not listed');
    const exact = chooserAnswering(1_000, false);
    await flushPromises();
    expect(exact.get('[data-testid="files-omitted"]').text()).toMatch(/^and 1,000 more entries not listed/);
  });

  it('says nothing of it when the folder was listed whole', async () => {
    const w = chooserAnswering(0, false);
    await flushPromises();
    expect(w.find('[data-testid="files-omitted"]').exists()).toBe(false);
    expect(w.text()).toContain('a.csv');
  });
});
