// @vitest-environment happy-dom
// Issue 13: the Reports area's store and components against the real services (real engine host,
// a real CPU benchmark of Fashion-MNIST made by the CLI), through the renderer's own ApiClient.
import { sameRuns } from '../../src-renderer/view-models/report-runs';
import { existsSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';

import { flushPromises, mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryHistory, createRouter } from 'vue-router';

import type { Services } from '../../src-main/core/services';
import { createServices } from '../../src-main/core/services';
import { ApiClient } from '../../src-renderer/transport/api-client';
import { setApiClient } from '../../src-renderer/transport/client-instance';
import TraceButton from '../../src-renderer/components/benchmarks/TraceButton.vue';
import { useReportsStore } from '../../src-renderer/stores/reports';
import ReportsView from '../../src-renderer/views/ReportsView.vue';
import { benchmarkRun } from '../cli/report-fixture';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';
import { installServicesClient } from './services-client';
import { areas } from '../../src-renderer/areas';

/** The view in the app's routes, at #/reports (it keeps the open report in the URL). */
async function mountReports(options: { attachTo?: Element } = {}) {
  const router = createRouter({ history: createMemoryHistory(), routes: areas.map((a) => ({ path: a.path, name: a.name, component: { template: '<div />' } })) });
  await router.push('/reports');
  return mount(ReportsView, { ...options, global: { plugins: [router] } });
}

let services: Services;
let cleanup: () => Promise<void>;
let runId: string;
const reportsDir = () => path.join(services.workspace.root, 'reports');

beforeAll(async () => {
  ({ services, cleanup } = await testServices());
  runId = await benchmarkRun(services.workspace.root);
}, 120_000);
afterAll(async () => {
  await cleanup?.();
});
beforeEach(() => {
  setActivePinia(createPinia());
  installServicesClient(services);
  rmSync(reportsDir(), { recursive: true, force: true });
});

/** Waits until every figure of the open report is loaded or has failed. */
async function figuresSettled(store: ReturnType<typeof useReportsStore>): Promise<void> {
  await expect.poll(() => Object.values(store.figures).some((f) => 'loading' in f), { timeout: 10_000 }).toBe(false);
}

describe('reports store', () => {
  it('generates a report from a real benchmark and shows its figures as the SVGs the workspace holds', async () => {
    const store = useReportsStore();
    await store.refreshRuns();
    expect(store.runs.map((r) => r.id)).toEqual([runId]);
    expect(await store.generate({ runIds: [runId], title: 'MLP on Fashion-MNIST' })).toBe(true);
    expect(store.actionError).toBeNull();
    const report = store.current!;
    expect(report.summary.id).toBe('0001-mlp-on-fashion-mnist');
    expect(store.draft).toBe(report.markdown);
    expect(store.dirty).toBe(false);
    expect(store.list.map((r) => r.id)).toEqual([report.summary.id]);

    await figuresSettled(store);
    expect(report.figures.length).toBeGreaterThan(0);
    const folder = path.join(reportsDir(), report.summary.id);
    for (const f of report.figures) {
      const state = store.figures[f.name];
      expect('url' in state, f.name).toBe(true);
      const url = (state as { url: string }).url;
      expect(decodeURIComponent(url.slice(url.indexOf(',') + 1))).toBe(readFileSync(path.join(folder, f.name), 'utf8'));
    }
  });

  it('says which figure cannot be read instead of failing the report', async () => {
    const store = useReportsStore();
    await store.generate({ runIds: [runId] });
    const id = store.current!.summary.id;
    const lost = store.current!.figures[0].name;
    rmSync(path.join(reportsDir(), id, lost));
    await store.open(id);
    await figuresSettled(store);
    const state = store.figures[lost];
    expect('error' in state && state.error).toMatch(new RegExp(`^figure ${lost} of report ${id} cannot be read: .*${lost} does not exist`));
    expect(store.actionError).toBeNull();
  });

  it('names a report that is not there, and a run list that cannot be written up', async () => {
    const store = useReportsStore();
    expect(await store.open('0042-gone')).toBe(false);
    expect(store.actionError).toMatch(/^there is no report 0042-gone in /);
    expect(await store.generate({ runIds: ['20990101-000000-abcdef'] })).toBe(false);
    expect(store.actionError).toMatch(/^.*20990101-000000-abcdef/);
    expect(store.current).toBeNull();
  });

  it('copies the editor’s text, unsaved edits included', async () => {
    const store = useReportsStore();
    await store.generate({ runIds: [runId] });
    store.draft = `${store.draft}\nOne more line, not saved yet.\n`;
    expect(await store.copyMarkdown()).toBe(true);
    expect(store.copied).toBe(true);
    expect(await navigator.clipboard.readText()).toBe(store.draft);
  });
});

describe('Reports area', () => {
  it('writes a report from ticked runs, previews edits live, and regenerates around the saved edit', async () => {
    const wrapper = await mountReports({ attachTo: document.body });
    await expect.poll(() => wrapper.find('[data-testid="reports-empty"]').exists()).toBe(true);
    // An optimisation is where most reports come from (issue 41 item 6): the empty state says how.
    expect(wrapper.find('[data-testid="reports-empty"]').text()).toMatch(/optimisation, benchmark.*an optimisation's result card writes its own in one click/s);

    await wrapper.get('[data-testid="report-new"]').trigger('click');
    await expect.poll(() => wrapper.find(`[data-testid="report-run-${runId}"]`).exists()).toBe(true);
    expect(wrapper.get('[data-testid="report-generate"]').attributes('disabled')).toBeDefined();
    await wrapper.get(`[data-testid="report-run-${runId}"] input[type="checkbox"]`).setValue(true);
    await wrapper.get('[data-testid="report-title"]').setValue('Where the MLP step goes');
    expect(wrapper.get('[data-testid="report-generate"]').text()).toBe('Generate report from 1 run');
    await wrapper.get('[data-testid="new-report"]').trigger('submit');
    await expect.poll(() => wrapper.find('[data-testid="report-editor"]').exists(), { timeout: 10_000 }).toBe(true);
    await figuresSettled(useReportsStore());
    await flushPromises();

    const preview = () => wrapper.get('[data-testid="report-preview"]');
    expect(preview().get('h1').text()).toBe('1. Where the MLP step goes');
    const images = preview().findAll('img');
    expect(images.length).toBe(useReportsStore().current!.figures.length);
    for (const img of images) expect(img.attributes('src')).toMatch(/^data:image\/svg\+xml;charset=utf-8,/);
    expect(preview().text()).not.toContain('tb:begin');
    expect(wrapper.get('[data-testid="report-state"]').text()).toBe('Saved');
    expect(wrapper.get('[data-testid="report-save"]').attributes('disabled')).toBeDefined();

    // An edit outside the generated blocks shows at once, and is unsaved until Save.
    const textarea = wrapper.get('[data-testid="report-markdown"]');
    const edited = (textarea.element as HTMLTextAreaElement).value.replace('## Status\n\nProposed\n', '## Status\n\nAccepted after review.\n');
    await textarea.setValue(edited);
    expect(preview().text()).toContain('Accepted after review.');
    expect(wrapper.get('[data-testid="report-state"]').text()).toBe('Unsaved edits');

    // Regenerate works on the saved file: with unsaved edits it asks first.
    await wrapper.get('[data-testid="report-regenerate"]').trigger('click');
    expect(wrapper.find('[data-testid="report-regenerate-confirm"]').exists()).toBe(true);
    await wrapper.get('[data-testid="report-save-regenerate"]').trigger('click');
    await expect.poll(() => wrapper.get('[data-testid="report-state"]').text(), { timeout: 10_000 }).toBe('Saved');
    const id = useReportsStore().current!.summary.id;
    const onDisk = readFileSync(path.join(reportsDir(), id, `${id}.md`), 'utf8');
    expect(onDisk).toContain('## Status\n\nAccepted after review.\n');
    expect((textarea.element as HTMLTextAreaElement).value).toBe(onDisk);
    expect(wrapper.find('[data-testid="report-error"]').exists()).toBe(false);

    // Ctrl+S in the editor saves, as in any editor.
    await textarea.setValue(`${onDisk}\nSaved from the keyboard.\n`);
    await textarea.trigger('keydown', { key: 's', ctrlKey: true });
    await expect.poll(() => wrapper.get('[data-testid="report-state"]').text()).toBe('Saved');
    expect(readFileSync(path.join(reportsDir(), id, `${id}.md`), 'utf8')).toBe(`${onDisk}\nSaved from the keyboard.\n`);
    wrapper.unmount();
  });

  it('writes only the sections ticked, in the order they were put in', async () => {
    const wrapper = await mountReports();
    await wrapper.get('[data-testid="report-new"]').trigger('click');
    await expect.poll(() => wrapper.find(`[data-testid="report-run-${runId}"]`).exists()).toBe(true);
    await wrapper.get(`[data-testid="report-run-${runId}"] input[type="checkbox"]`).setValue(true);
    const section = (name: string) => wrapper.get(`[data-testid="report-section-${name}"]`);
    await section('reproduce').get('input').setValue(false);
    await section('limits').get('input').setValue(false);
    await section('decision').get('button[aria-label="Move Decision up"]').trigger('click');
    expect(wrapper.get('[data-testid="report-sections"] summary').text()).toBe('Sections: 6 of 8, in your order');
    await wrapper.get('[data-testid="new-report"]').trigger('submit');
    await expect.poll(() => wrapper.find('[data-testid="report-editor"]').exists(), { timeout: 10_000 }).toBe(true);
    const store = useReportsStore();
    expect(store.current!.sections).toEqual(['status', 'context', 'phases', 'decision', 'attempts', 'consequences']);
    expect([...store.draft.matchAll(/^## (.+)$/gm)].map((m) => m[1])).toEqual([
      'Status',
      'Context',
      'Baseline metrics and phase breakdown',
      'Decision',
      'Attempts',
      'Consequences',
    ]);
  });

  it("lists runs by the name a person gave them, with the title beside it (it showed the title only)", async () => {
    await services.router.dispatch('runs.annotate', { id: runId, name: 'My baseline', tags: [], notes: '' });
    try {
      const wrapper = await mountReports();
      await wrapper.get('[data-testid="report-new"]').trigger('click');
      await expect.poll(() => wrapper.find(`[data-testid="report-run-${runId}"]`).exists()).toBe(true);
      const row = wrapper.get(`[data-testid="report-run-${runId}"]`);
      expect(row.get('[data-testid="report-run-name"]').text()).toBe('My baseline');
      expect(row.text()).toContain(`· ${runId}`);
      wrapper.unmount();
    } finally {
      await services.router.dispatch('runs.annotate', { id: runId, name: '', tags: [], notes: '' });
    }
  });

  it('drops unsaved edits on regenerate only when asked to', async () => {
    const store = useReportsStore();
    await store.generate({ runIds: [runId] });
    const generated = store.current!.markdown;
    const wrapper = await mountReports();
    await flushPromises();
    await wrapper.get('[data-testid="report-markdown"]').setValue(`${generated}\nA thought I will throw away.\n`);
    await wrapper.get('[data-testid="report-regenerate"]').trigger('click');
    await wrapper.get('[data-testid="report-discard-regenerate"]').trigger('click');
    await expect.poll(() => store.busy).toBeNull();
    expect(store.draft).not.toContain('A thought I will throw away.');
    expect(store.dirty).toBe(false);
  });

  it('exports the saved markdown and its charts into a workspace folder, and names a folder outside it', async () => {
    const store = useReportsStore();
    await store.generate({ runIds: [runId] });
    const report = store.current!;
    const wrapper = await mountReports();
    await flushPromises();
    expect((wrapper.get('[data-testid="report-export-dir"]').element as HTMLInputElement).value).toBe(`exports/${report.summary.id}`);
    await wrapper.get('[data-testid="report-export-dir"]').setValue('exports/adr');
    await wrapper.get('[data-testid="report-export"]').trigger('submit');
    await expect.poll(() => wrapper.find('[data-testid="report-exported"]').exists(), { timeout: 10_000 }).toBe(true);
    const dir = path.join(services.workspace.root, 'exports', 'adr');
    expect(readdirSync(dir).sort()).toEqual([`${report.summary.id}.md`, ...report.figures.map((f) => f.name)].sort());
    expect(wrapper.get('[data-testid="report-exported"]').text()).toContain(`Exported to ${dir}:`);

    await wrapper.get('[data-testid="report-export-dir"]').setValue('../elsewhere');
    await wrapper.get('[data-testid="report-export"]').trigger('submit');
    await expect.poll(() => wrapper.find('[data-testid="report-error"]').exists()).toBe(true);
    expect(wrapper.get('[data-testid="report-error"]').text()).toMatch(/^path "\.\.\/elsewhere" is outside the workspace$/);
    expect(existsSync(path.join(services.workspace.root, '..', 'elsewhere'))).toBe(false);
  });

  it('asks before opening another report over unsaved edits, and before removing one', async () => {
    const store = useReportsStore();
    await store.generate({ runIds: [runId], title: 'First' });
    await store.generate({ runIds: [runId], title: 'Second' });
    const wrapper = await mountReports();
    await flushPromises();
    await wrapper.get('[data-testid="report-markdown"]').setValue('# 2. Second, rewritten\n');
    await wrapper.get('[data-testid="report-0001-first"]').trigger('click');
    await flushPromises(); // through the route: the report chosen is a step of the history
    expect(wrapper.get('[data-testid="report-unsaved-confirm"]').text()).toContain('Second has unsaved edits. Before you open 0001-first:');
    expect(store.current!.summary.id).toBe('0002-second');
    await wrapper.get('[data-testid="report-unsaved-drop"]').trigger('click');
    await expect.poll(() => store.current?.summary.id).toBe('0001-first');

    // Remove asks first; Keep leaves the folder alone.
    const row = () => wrapper.get('[data-testid="report-0001-first"]');
    await row().get('[data-testid="report-remove"]').trigger('click');
    expect(row().text()).toContain('Delete reports/0001-first/0001-first.md and its charts?');
    await row().get('[data-testid="report-remove-cancel"]').trigger('click');
    expect(existsSync(path.join(reportsDir(), '0001-first'))).toBe(true);
    await row().get('[data-testid="report-remove"]').trigger('click');
    await row().get('[data-testid="report-remove-confirm"]').trigger('click');
    await expect.poll(() => wrapper.find('[data-testid="report-0001-first"]').exists()).toBe(false);
    expect(existsSync(path.join(reportsDir(), '0001-first'))).toBe(false);
    // The open report was the one removed: the editor closes.
    expect(wrapper.find('[data-testid="report-editor"]').exists()).toBe(false);
    expect(store.list.map((r) => r.id)).toEqual(['0002-second']);
  });

  it('names the open report in the URL, asks about unsaved edits before the URL moves, and a link to no report leaves it', async () => {
    const store = useReportsStore();
    await store.generate({ runIds: [runId], title: 'Kept open' });
    await store.generate({ runIds: [runId], title: 'Other' });
    const wrapper = await mountReports();
    const open = store.current!.summary.id;
    const query = () => wrapper.vm.$router.currentRoute.value.query.report;
    // Once the list is read (a real round trip to the services, not a microtask).
    await expect.poll(query).toBe(open);
    // A link to a report that is not there: the URL names the open one again.
    await wrapper.vm.$router.push({ query: { report: '0999-gone' } });
    await expect.poll(query).toBe(open);
    expect(store.current!.summary.id).toBe(open);
    await wrapper.get('[data-testid="report-markdown"]').setValue('# edited\n');
    const other = store.list.find((r) => r.id !== open)!.id;
    // Asked first: the URL moves only once the person has chosen.
    await wrapper.get(`[data-testid="report-${other}"]`).trigger('click');
    await expect.poll(() => wrapper.find('[data-testid="report-unsaved-stay"]').exists()).toBe(true);
    expect(query()).toBe(open);
    await wrapper.get('[data-testid="report-unsaved-stay"]').trigger('click');
    await flushPromises();
    expect(query()).toBe(open);
    expect(store.current!.summary.id).toBe(open);
  });

  it('saves unsaved edits before closing when asked to, and shows a failed generate under New report', async () => {
    const store = useReportsStore();
    await store.generate({ runIds: [runId], title: 'Closing' });
    const wrapper = await mountReports();
    await flushPromises();
    const mine = `${store.current!.markdown}\nKept on close.\n`;
    await wrapper.get('[data-testid="report-markdown"]').setValue(mine);
    await wrapper.get('[data-testid="report-close"]').trigger('click');
    expect(wrapper.get('[data-testid="report-unsaved-confirm"]').text()).toContain('Before you close it:');
    expect(wrapper.find('[data-testid="report-editor"]').exists()).toBe(true);
    await wrapper.get('[data-testid="report-unsaved-save"]').trigger('click');
    await expect.poll(() => wrapper.find('[data-testid="report-editor"]').exists()).toBe(false);
    expect(readFileSync(path.join(reportsDir(), '0001-closing', '0001-closing.md'), 'utf8')).toBe(mine);

    // A report is open again; the new one fails (its run is gone): the error shows where it was asked for.
    await store.open('0001-closing');
    await wrapper.get('[data-testid="report-new"]').trigger('click');
    await expect.poll(() => wrapper.find(`[data-testid="report-run-${runId}"]`).exists()).toBe(true);
    await wrapper.get(`[data-testid="report-run-${runId}"] input[type="checkbox"]`).setValue(true);
    const runDir = path.join(services.workspace.root, 'runs', runId);
    const hidden = `${runDir}.away`;
    renameSync(runDir, hidden);
    try {
      await wrapper.get('[data-testid="new-report"]').trigger('submit');
      await expect.poll(() => wrapper.find('[data-testid="report-generate-error"]').exists(), { timeout: 10_000 }).toBe(true);
    } finally {
      renameSync(hidden, runDir);
    }
    expect(wrapper.get('[data-testid="report-generate-error"]').text()).toMatch(new RegExp(`^.*${runId}`));
    expect(wrapper.find('[data-testid="report-error"]').exists()).toBe(false);
    expect(store.current!.summary.id).toBe('0001-closing');
  });
});

describe('Reports area in the desktop app', () => {
  it('exports into the folder the dialog returns, and does nothing when the dialog is cancelled', async () => {
    const chosen = tempDir('trainbench-chosen-');
    const answers: (string | null)[] = [path.join(chosen.dir, 'adr'), null];
    const asked: string[] = [];
    // The same services, with the desktop shell's folder dialog answering from the list above.
    const desktop = await createServices({
      workspaceDir: services.workspace.root,
      chooseFolder: (name) => (asked.push(name), Promise.resolve(answers.shift() ?? null)),
    });
    try {
      const store = useReportsStore();
      await store.generate({ runIds: [runId], title: 'Desktop export' });
      const report = store.current!;
      const web = installServicesClient(desktop);
      setApiClient(new ApiClient({ ...web.transport, kind: 'electron-ipc' }));
      const wrapper = await mountReports();
      await flushPromises();
      // The desktop app saves through its dialog: no zip download there (no server to fetch it from).
      expect(wrapper.find('[data-testid="report-download"]').exists()).toBe(false);
      await wrapper.get('[data-testid="report-export-chosen"]').trigger('click');
      await expect.poll(() => wrapper.find('[data-testid="report-exported"]').exists(), { timeout: 10_000 }).toBe(true);
      expect(asked).toEqual([report.summary.id]);
      expect(readdirSync(path.join(chosen.dir, 'adr')).sort()).toEqual([`${report.summary.id}.md`, ...report.figures.map((f) => f.name)].sort());

      store.exported = null;
      await wrapper.get('[data-testid="report-export-chosen"]').trigger('click');
      await expect.poll(() => asked.length).toBe(2);
      await expect.poll(() => store.busy).toBeNull();
      expect(store.exported).toBeNull();
      expect(store.actionError).toBeNull();
      expect(readdirSync(chosen.dir)).toEqual(['adr']);
    } finally {
      await desktop.dispose();
      chosen.cleanup();
    }
  });

  it('has no chosen-folder button in serve mode, and offers the zip download there', async () => {
    const store = useReportsStore();
    await store.generate({ runIds: [runId] });
    const wrapper = await mountReports();
    await flushPromises();
    expect(wrapper.find('[data-testid="report-export"]').exists()).toBe(true);
    expect(wrapper.find('[data-testid="report-export-chosen"]').exists()).toBe(false);
    expect(wrapper.get('[data-testid="report-download"]').text()).toBe('Download (zip)');
  });
});

describe('Download trace', () => {
  it('names the run it could not trace', async () => {
    const wrapper = mount(TraceButton, { props: { runId: '20990101-000000-abcdef' } });
    await wrapper.get('button').trigger('click');
    await expect.poll(() => wrapper.find('[role="alert"]').exists(), { timeout: 10_000 }).toBe(true);
    expect(wrapper.get('[role="alert"]').text()).toMatch(/^.*20990101-000000-abcdef/);
    expect(wrapper.get('button').text()).toBe('Download trace');
  });
});

describe('sameRuns', () => {
  it('matches reports of the same run ids in any order, and no other', () => {
    expect(sameRuns(['a', 'b'], ['b', 'a'])).toBe(true);
    expect(sameRuns(['a'], ['a', 'b'])).toBe(false);
    expect(sameRuns(['a', 'a'], ['a', 'b'])).toBe(false);
  });
});
