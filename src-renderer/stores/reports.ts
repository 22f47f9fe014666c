import type { ReportDetail, ReportExportResult, ReportGenerateRequest, ReportSummary } from '@api/reports';
import type { RunSummary } from '@api/training';
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';

import type { FigureState } from '../view-models/render-report';
import { svgDataUrl } from '../view-models/render-report';
import { useApiClient } from '../transport/client-instance';
import { errorText } from './error-text';
import { useLoader } from './load-state';

/** Run kinds a report is written from (the optimisation wizard's runs once it records them). */
export const REPORTABLE_KINDS: readonly string[] = ['benchmark', 'batch-search', 'train', 'optimise'];

/** What the open report is busy with; the buttons say so and wait. */
export type ReportAction = 'generating' | 'opening' | 'saving' | 'regenerating' | 'exporting' | 'copying' | 'removing';

/** The Reports area: the workspace's reports, the open one with its unsaved edits, and the runs a new one can be written from. */
export const useReportsStore = defineStore('reports', () => {
  /** Every report of the workspace, newest number first. */
  const list = shallowRef<ReportSummary[]>([]);
  const { loading, error, run: refresh } = useLoader(async () => {
    list.value = await useApiClient().call('reports.list', {});
  });

  /** Completed runs of the kinds a report covers, newest first. */
  const runs = shallowRef<RunSummary[]>([]);
  const { loading: runsLoading, error: runsError, run: refreshRuns } = useLoader(async () => {
    const all = await useApiClient().call('runs.list', {});
    // A cancelled batch-size search that kept its trials' answer is written up too, labelled (report-runs.ts: the one
    // cancelled kind a report takes; a cancelled loader benchmark keeps its rows but is not reported).
    const partialSearch = (r: RunSummary) => r.partialResult === true && r.kind === 'batch-search';
    runs.value = all.filter((r) => (r.status === 'completed' || partialSearch(r)) && REPORTABLE_KINDS.includes(r.kind));
  });

  /** The open report as last read or written. */
  const current = shallowRef<ReportDetail | null>(null);
  /** The editor's text: the markdown with the person's unsaved edits. */
  const draft = ref('');
  const dirty = computed(() => current.value !== null && draft.value !== current.value.markdown);
  // A reload or a closed tab would drop the draft without a word: the browser (or the app's dialog) asks first.
  if (typeof window !== 'undefined') {
    window.addEventListener('beforeunload', (event) => {
      if (!dirty.value) return;
      event.preventDefault();
      event.returnValue = '';
    });
  }
  /** The open report's figures by file name, for the preview. */
  const figures = shallowRef<Record<string, FigureState>>({});
  const busy = ref<ReportAction | null>(null);
  /** What the last action on a report failed with (code and message); null after one that worked. */
  const actionError = ref<string | null>(null);
  /** Which action that was, so the view shows the error where it was asked for. */
  const failed = ref<ReportAction | null>(null);
  /** Where the last export of the open report went, and which files it wrote. */
  const exported = shallowRef<ReportExportResult | null>(null);
  /** Set when the last copy to the clipboard worked; cleared by the next action. */
  const copied = ref(false);
  /** Bumped on every open, so figures still arriving for an earlier report are dropped. */
  let generation = 0;

  function show(detail: ReportDetail): void {
    current.value = detail;
    draft.value = detail.markdown;
    void loadFigures(detail);
  }

  /** Fetches every figure's SVG (reports.figure) and turns it into a data: URL; one that fails says why. */
  async function loadFigures(detail: ReportDetail): Promise<void> {
    const mine = ++generation;
    const client = useApiClient();
    figures.value = Object.fromEntries(detail.figures.map((f) => [f.name, { loading: true } as FigureState]));
    await Promise.all(
      detail.figures.map(async (f) => {
        let state: FigureState;
        try {
          state = { url: svgDataUrl((await client.call('reports.figure', { id: detail.summary.id, name: f.name })).svg) };
        } catch (err) {
          state = { error: errorText(err) };
        }
        if (mine === generation) figures.value = { ...figures.value, [f.name]: state };
      }),
    );
  }

  /** Runs one action on a report: busy while it runs, its failure kept in actionError. Returns whether it worked. */
  async function act(action: ReportAction, work: () => Promise<void>): Promise<boolean> {
    if (busy.value) return false;
    busy.value = action;
    actionError.value = null;
    failed.value = null;
    copied.value = false;
    try {
      await work();
      return true;
    } catch (err) {
      actionError.value = errorText(err);
      failed.value = action;
      return false;
    } finally {
      busy.value = null;
    }
  }

  /** Opens a report in the editor; unsaved edits of the one open are the caller's to confirm. */
  async function open(id: string): Promise<boolean> {
    return act('opening', async () => {
      exported.value = null;
      show(await useApiClient().call('reports.get', { id }));
    });
  }

  /** Writes a new report from the runs (in the order given: the baseline first) and opens it. */
  async function generate(request: ReportGenerateRequest): Promise<boolean> {
    const worked = await act('generating', async () => {
      exported.value = null;
      show(await useApiClient().call('reports.generate', request));
    });
    if (worked) await refresh();
    return worked;
  }

  async function save(): Promise<boolean> {
    const report = current.value;
    if (!report) return false;
    return act('saving', async () => {
      // Text typed while the save is on its way stays in the editor, and counts as unsaved.
      current.value = await useApiClient().call('reports.save', { id: report.summary.id, markdown: draft.value });
    });
  }

  /**
   * Redraws the generated blocks from the runs; the saved text outside them is kept.
   * Regenerating works on the saved file, so the view asks first when the editor has unsaved edits.
   */
  async function regenerate(): Promise<boolean> {
    const report = current.value;
    if (!report) return false;
    return act('regenerating', async () => show(await useApiClient().call('reports.regenerate', { id: report.summary.id })));
  }

  /** Copies the saved markdown and figures into a folder of the workspace (serve mode, or by name in the desktop app). */
  async function exportToFolder(dir: string): Promise<boolean> {
    const report = current.value;
    if (!report) return false;
    exported.value = null; // a refused export must not sit beside the last one's "Exported to"
    return act('exporting', async () => {
      exported.value = await useApiClient().call('reports.export', { id: report.summary.id, dir });
    });
  }

  /** Desktop app: copies into a folder the person picks in a dialog; cancelling it changes nothing. */
  async function exportToChosenFolder(): Promise<boolean> {
    const report = current.value;
    if (!report) return false;
    exported.value = null;
    return act('exporting', async () => {
      const result = await useApiClient().call('reports.exportToChosenFolder', { id: report.summary.id });
      if (result.dir !== null) exported.value = { dir: result.dir, files: result.files };
    });
  }

  /** Puts the editor's markdown (unsaved edits included) on the clipboard. */
  async function copyMarkdown(): Promise<boolean> {
    const text = draft.value;
    const worked = await act('copying', async () => {
      if (!navigator.clipboard) throw new Error('this page has no clipboard access (it needs https or localhost): select the text in the editor and copy it');
      await navigator.clipboard.writeText(text);
    });
    copied.value = worked;
    return worked;
  }

  /** Deletes the report's folder and closes it if it was open. */
  async function remove(id: string): Promise<boolean> {
    const worked = await act('removing', async () => {
      await useApiClient().call('reports.remove', { id });
      if (current.value?.summary.id === id) close();
    });
    await refresh();
    return worked;
  }

  function close(): void {
    generation++;
    current.value = null;
    draft.value = '';
    figures.value = {};
    exported.value = null;
  }

  return {
    list,
    loading,
    error,
    refresh,
    runs,
    runsLoading,
    runsError,
    refreshRuns,
    current,
    draft,
    dirty,
    figures,
    busy,
    actionError,
    failed,
    exported,
    open,
    generate,
    save,
    regenerate,
    exportToFolder,
    exportToChosenFolder,
    copied,
    copyMarkdown,
    remove,
    close,
  };
});
