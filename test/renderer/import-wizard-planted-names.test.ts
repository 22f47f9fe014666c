// @vitest-environment happy-dom
// A file name, a CSV's header columns and its text labels come from the workspace: the file chooser, the Import
// wizard's chosen path, its label-column choices and its class-label preview show them through printable (a
// right-to-left override, a line separator or an ESC is seen escaped, never acted on), while the requests keep
// the real names (the path to read, the label column to use).
import { flushPromises, mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { describe, expect, it } from 'vitest';

import type { InspectResult } from '../../src-main/api/datasets';
import FileChooser from '../../src-renderer/components/datasets/FileChooser.vue';
import ImportWizard from '../../src-renderer/components/datasets/ImportWizard.vue';
import { previewText } from '../../src-renderer/composables/useImportWizard';
import { installFakeClient, ok } from './fake-client';

// eslint-disable-next-line no-control-regex -- control characters are what it finds
const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
// "report\u202Evsc.csv" would read as "reportcsv.csv"; the line separator and ESC would break or redraw the line.
const name = 'report\u202Evsc\u2028x\x1b[2K.csv';
const shownName = 'report\\u202evsc\\u2028x\\x1b[2K.csv';
const filePath = `sources/${name}`;
const column = 'spe\u202Ecies\u2028\x1b[8m';
const shownColumn = 'spe\\u202ecies\\u2028\\x1b[8m';
const classes = ['set\u202Easo', 'vir\u2028ginica', 'ver\x1b[2Ksi'];
const inspected: InspectResult = {
  // The importers describe a source by its path: a planted file name reaches this line (re-attack 11).
  description: `a CSV, ${filePath}`,
  records: 3,
  fields: [
    { name: 'x', dtype: 'float32', shape: [2] },
    { name: 'y', dtype: 'int32', shape: [], classes },
  ],
  preview: [
    { x: [1, 2], y: [0] },
    { x: [3, 4], y: [1] },
    { x: [5, 6], y: [2] },
  ],
  uncached: { available: true, reason: null },
};

function answering() {
  return installFakeClient((method) => {
    if (method === 'files.list') return ok({ dir: 'sources', entries: [{ name, path: filePath, kind: 'file', bytes: 10 }, { name: 'sub\u202Edir', path: 'sources/sub\u202Edir', kind: 'dir', bytes: 0 }], omitted: 0, omittedAtLeast: false });
    if (method === 'datasets.csvHeader') return ok({ path: filePath, columns: ['a', column], suggestedLabel: column });
    if (method === 'datasets.inspect') return ok(inspected);
    return ok(null);
  });
}

describe('names planted in workspace files, in the Import wizard', () => {
  it('the file chooser lists a planted file name (and folder name) escaped, and chooses the real path', async () => {
    setActivePinia(createPinia());
    answering();
    const w = mount(FileChooser);
    await flushPromises();
    const list = w.get('[data-testid="file-chooser"]').text();
    expect(list).not.toMatch(UNSHOWABLE);
    expect(list).toContain(shownName);
    expect(list).toContain('sub\\u202edir/');
    await w.get('button.link:not([disabled])[data-testid]').trigger('click');
    expect(w.emitted('choose')).toEqual([[filePath]]);
  });

  it("the chosen path, the label column's choices and the class-label preview are shown escaped; the requests keep the real names", async () => {
    const pinia = createPinia();
    setActivePinia(pinia);
    const fake = answering();
    const w = mount(ImportWizard, { global: { plugins: [pinia], stubs: { SourceUpload: true } } });
    await flushPromises();
    await w.get('[data-testid="file-chooser"] button[data-testid]').trigger('click');
    await flushPromises();

    const chosen = w.get('[data-testid="chosen-files"]');
    expect(chosen.text()).not.toMatch(UNSHOWABLE);
    expect(chosen.get('code').text()).toBe(`sources/${shownName}`);
    expect(chosen.get('code').attributes('title')).toBe(`sources/${shownName}`);
    expect(chosen.get('button.remove').attributes('aria-label')).toBe(`remove ${shownName}`);

    const options = w.get('[data-testid="csv-label"]').findAll('option');
    for (const o of options) expect(o.text()).not.toMatch(UNSHOWABLE);
    expect(options.map((o) => o.text())).toEqual(['a', shownColumn]);
    // The option's value is the real column name: that is what the request needs.
    expect((options[1].element as HTMLOptionElement).value).toBe(column);
    expect(fake.calls.find((c) => c.method === 'datasets.csvHeader')?.params).toEqual({ path: filePath });

    await w.get('[data-testid="inspect"]').trigger('click');
    await flushPromises();
    expect(fake.calls.find((c) => c.method === 'datasets.inspect')?.params).toMatchObject({ source: { kind: 'csv', path: filePath, label: column } });
    const table = w.get('[data-testid="field-table"]').text();
    expect(table).not.toMatch(UNSHOWABLE);
    expect(table).toContain('0 (set\\u202easo)');
    expect(table).toContain('1 (vir\\u2028ginica)');
    expect(table).toContain('2 (ver\\x1b[2Ksi)');
    const described = w.get('[data-testid="field-table"]').element.closest('div')!.textContent!;
    expect(described).toContain(`records in a CSV, sources/${shownName}.`);
    expect(described).not.toMatch(UNSHOWABLE);
  });

  it('previewText shows class names escaped', () => {
    const text = previewText([0, 1, 2, 7], classes);
    expect(text).not.toMatch(UNSHOWABLE);
    expect(text).toBe('0 (set\\u202easo), 1 (vir\\u2028ginica), 2 (ver\\x1b[2Ksi), 7');
  });
});
