import { JOB_EVENTS } from '@api/jobs';
import type { ModelEntry } from '@api/model-files';
import type { OptimiseProgress } from '@api/optimise';
import { OptimiseProgressSchema } from '@api/optimise';
import type { RunAnnotation } from '@api/run-notes';
import type { RunDetail, RunSummary } from '@api/training';
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';

import { errorText } from './error-text';
import { useJobsStore } from './jobs';
import { useLoader } from './load-state';
import { useApiClient } from '../transport/client-instance';
import { shortRunTitle } from '../view-models/run-title';

/** The Runs list's kind filter: each choice, its label, and the runs it shows (one table, so the chips and the test agree). */
export const RUN_FILTERS = [
  { key: 'all', label: 'all', shows: () => true },
  { key: 'training', label: 'training', shows: (r: RunSummary) => r.kind === 'train' },
  { key: 'benchmark', label: 'benchmark', shows: (r: RunSummary) => r.kind === 'benchmark' },
  { key: 'batch-search', label: 'batch search', shows: (r: RunSummary) => r.kind === 'batch-search' },
  { key: 'optimise', label: 'optimisation', shows: (r: RunSummary) => r.kind === 'optimise' },
  { key: 'loader', label: 'loader', shows: (r: RunSummary) => r.kind === 'loader-benchmark' },
  // Every kind of run of the user's own command: it crosses the kinds above.
  { key: 'script', label: 'script', shows: (r: RunSummary) => r.target === 'script' },
] as const;
export type RunFilterKey = (typeof RUN_FILTERS)[number]['key'];

/**
 * While jobs report progress the list is read again at most this often: a running row's step and
 * status stay current without a request per event (a run emits up to ~20 a second).
 */
export const LIVE_REFRESH_MS = 2000;
/** While the open run is running, its page (charts, events) is read again at most this often. */
export const LIVE_DETAIL_MS = 10_000;
/** The job events that mean a run is moving (a dataset build records no run). */
const RUN_EVENTS = JOB_EVENTS.filter((e) => e !== 'datasets.progress');

/** The name a person gave the run, else its title. */
/** A run as lists name it: its own name, else its short title (view-models/run-title.ts). */
export const runName = (r: RunSummary): string => r.annotation?.name || shortRunTitle(r.title);

/** Whether the run's id, title, name, tags or notes contain the text (any case). */
function matches(r: RunSummary, text: string): boolean {
  const needle = text.trim().toLowerCase();
  if (!needle) return true;
  const a = r.annotation;
  return [r.id, r.title, a?.name ?? '', a?.notes ?? '', ...(a?.tags ?? [])].some((s) => s.toLowerCase().includes(needle));
}

/** Runs recorded in the workspace (training and benchmarks), newest first. */
export const useRunsStore = defineStore('runs', () => {
  const list = shallowRef<RunSummary[]>([]);
  /** The run whose details are shown. */
  const selected = shallowRef<RunDetail | null>(null);
  /** Ids ticked for Compare, in the order they were ticked. */
  const picked = ref<string[]>([]);
  /** The picked runs' details, once compare() has loaded them. */
  const compared = shallowRef<RunDetail[]>([]);
  /** Models the New run form offers: built-ins and the workspace's spec files. */
  const models = shallowRef<ModelEntry[]>([]);
  /** Which kinds of run the list shows. */
  const filter = ref<RunFilterKey>('all');
  /** Text the shown runs' id, title, name, tags or notes contain. */
  const search = ref('');
  /** Why the last annotate() failed, beside the editor (null: it did not). */
  const annotateError = ref<string | null>(null);
  /** The latest optimise.progress of each optimisation running in this server, by its run's id: the list says where it stands. */
  const wizardProgress = shallowRef<ReadonlyMap<string, OptimiseProgress>>(new Map());
  function takeWizardProgress(p: OptimiseProgress): void {
    if (!p.runId) return;
    wizardProgress.value = new Map([...wizardProgress.value, [p.runId, p]]);
  }
  /** An optimise run's latest progress: heard here, or the last one its job recorded (jobs.list, for a window opened meanwhile). */
  function wizardProgressOf(runId: string): OptimiseProgress | null {
    const heard = wizardProgress.value.get(runId);
    if (heard) return heard;
    for (const job of useJobsStore().live) {
      if (job.kind !== 'optimise') continue;
      for (let i = job.events.length - 1; i >= 0; i--) {
        const e = job.events[i];
        const parsed = e.event === 'optimise.progress' ? OptimiseProgressSchema.safeParse(e.data) : null;
        if (parsed?.success && parsed.data.runId === runId) return parsed.data;
      }
    }
    return null;
  }
  let listed = 0;
  /** Reads the list; a live refresh and a click may overlap, so only the latest request's answer is shown. */
  async function readList(): Promise<RunSummary[]> {
    const mine = ++listed;
    const runs = await useApiClient().call('runs.list', {});
    if (mine === listed) list.value = runs;
    return runs;
  }
  const { loading, error, run: refresh } = useLoader(async () => void (await readList()));

  /** The list as the filter and search show it. */
  const shown = computed(() => {
    const f = RUN_FILTERS.find((x) => x.key === filter.value) ?? RUN_FILTERS[0];
    return list.value.filter((r) => f.shows(r) && matches(r, search.value));
  });
  /** How many runs each filter would show (before the search). */
  const counts = computed(() => Object.fromEntries(RUN_FILTERS.map((f) => [f.key, list.value.filter((r) => f.shows(r)).length])) as Record<RunFilterKey, number>);

  /** When the open run was last read (runs.get), for refreshLive. */
  let detailReadAt = 0;
  let opened = 0;
  async function open(id: string): Promise<void> {
    // A live re-read and a click (or the end of a job) may overlap: an older answer never replaces a newer one.
    const mine = ++opened;
    error.value = null;
    detailReadAt = Date.now();
    try {
      const detail = await useApiClient().call('runs.get', { id });
      if (mine === opened) selected.value = detail;
    } catch (err) {
      if (mine === opened) error.value = errorText(err);
    }
  }

  /** Closes the open run's page (the URL names none any more); a read still in flight is dropped. */
  function close(): void {
    opened++;
    selected.value = null;
  }

  /**
   * After a job this window started: lists again and opens its run however it ended. Decided on this
   * request's own answer, not on the list shown, which a live refresh still in flight may not have
   * replaced yet. A request the engine refused left no run: nothing opens.
   */
  async function showEnded(id: string): Promise<void> {
    let runs: RunSummary[];
    error.value = null;
    try {
      runs = await readList();
    } catch (err) {
      error.value = errorText(err);
      return;
    }
    if (runs.some((r) => r.id === id)) await open(id);
  }

  /** The models list; a failure leaves the built-ins the form always offers, and says why. */
  async function loadModels(): Promise<void> {
    try {
      models.value = await useApiClient().call('models.list', {});
    } catch (err) {
      error.value = `cannot list the workspace's model spec files: ${errorText(err)}`;
    }
  }

  function togglePick(id: string): void {
    picked.value = picked.value.includes(id) ? picked.value.filter((x) => x !== id) : [...picked.value, id];
  }

  /** Loads every picked run (two at least) for the Compare panel. */
  async function compare(): Promise<void> {
    error.value = null;
    if (picked.value.length < 2) {
      error.value = `pick at least two runs to compare (${picked.value.length} picked)`;
      return;
    }
    try {
      const client = useApiClient();
      compared.value = await Promise.all(picked.value.map((id) => client.call('runs.get', { id })));
    } catch (err) {
      error.value = errorText(err);
    }
  }

  function closeCompare(): void {
    compared.value = [];
  }

  /** Stores a run's name, tags or notes; the list and the open run show them at once. False (and why, in annotateError) when refused. */
  async function annotate(id: string, fields: Partial<Pick<RunAnnotation, 'name' | 'tags' | 'notes'>>): Promise<boolean> {
    annotateError.value = null;
    let annotation: RunAnnotation;
    try {
      annotation = await useApiClient().call('runs.annotate', { id, ...fields });
    } catch (err) {
      annotateError.value = errorText(err);
      return false;
    }
    const withIt = (r: RunSummary): RunSummary => ({ ...r, annotation, annotationProblem: undefined });
    list.value = list.value.map((r) => (r.id === id ? withIt(r) : r));
    if (selected.value?.summary.id === id) selected.value = { ...selected.value, summary: withIt(selected.value.summary) };
    return true;
  }

  /**
   * Lists again; reads the open run again when its status changed, and while it runs at most every
   * LIVE_DETAIL_MS (its charts grow; runs.get reads the whole events file, so not every 2 s).
   */
  async function refreshLive(): Promise<void> {
    const asked = opened;
    await refresh();
    const shownRun = selected.value;
    // A run opened meanwhile (a click, a job's end) is what the person wants shown: the older one is not read again over it.
    if (!shownRun || opened !== asked) return;
    const now = list.value.find((r) => r.id === shownRun.summary.id);
    const changed = now !== undefined && now.status !== shownRun.summary.status;
    if (changed || (shownRun.summary.status === 'running' && Date.now() - detailReadAt >= LIVE_DETAIL_MS)) {
      await open(shownRun.summary.id);
    }
  }

  /**
   * Keeps the list current while jobs run, from their events: a job's start, its progress and its
   * end each ask for a refresh, and refreshes come at most every LIVE_REFRESH_MS (the last one
   * always comes). Returns the function that stops following.
   */
  function follow(): () => void {
    const client = useApiClient();
    let timer: ReturnType<typeof setTimeout> | null = null;
    let last = 0;
    const soon = () => {
      if (timer) return;
      timer = setTimeout(
        () => {
          timer = null;
          last = Date.now();
          void refreshLive();
        },
        Math.max(0, last + LIVE_REFRESH_MS - Date.now()),
      );
    };
    const offs = [
      client.on('jobs.started', soon),
      client.on('jobs.ended', soon),
      client.on('optimise.progress', takeWizardProgress),
      ...RUN_EVENTS.map((e) => client.on(e, soon)),
    ];
    return () => {
      offs.forEach((off) => off());
      if (timer) clearTimeout(timer);
      timer = null;
    };
  }

  return {
    list,
    shown,
    counts,
    filter,
    search,
    selected,
    picked,
    compared,
    models,
    loading,
    error,
    annotateError,
    refresh,
    open,
    close,
    showEnded,
    loadModels,
    togglePick,
    compare,
    closeCompare,
    annotate,
    follow,
    wizardProgressOf,
  };
});
