import type { LoaderBenchProgress, LoaderBenchResult, LoaderBenchRow } from '@api/datasets';
import { loaderBenchBatch } from '@api/datasets';
import type { JobInfo } from '@api/jobs';
import type { MethodParams } from '@api/methods';
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';

import { useJob } from '../composables/useJob';
import { useJobsStore } from './jobs';

/** Rows measured so far, by the files they read. */
export interface LoaderRows {
  cached: LoaderBenchRow[];
  uncached: LoaderBenchRow[];
}

/** A benchmark the person stopped: how far it got, and the run that keeps what it measured. */
export interface LoaderBenchStopped {
  runId: string | null;
  done: number;
  total: number;
}

/** Where a running loader benchmark is, in words and as a fraction of its settings. */
export function loaderProgressText(p: LoaderBenchProgress | null, cancelling: boolean): { text: string; fraction: number } {
  if (!p) return { text: 'opening the cache…', fraction: 0 };
  const fraction = p.total > 0 ? p.done / p.total : 0;
  const where = p.path === 'cached' ? 'the cache' : 'the source files in place';
  const setting = `${p.workers} worker${p.workers === 1 ? '' : 's'}, prefetch ${p.prefetch}`;
  if (cancelling) return { text: `stopping after the setting in flight (at most ${p.maxSeconds} s)…`, fraction };
  if (p.phase === 'measuring') return { text: `setting ${p.done + 1} of ${p.total}: ${setting}, reading ${where}…`, fraction };
  return { text: `${p.done} of ${p.total} settings measured`, fraction };
}

/**
 * The data-loader benchmark of a dataset cache, as a job: its settings' rows as they are measured,
 * a bar, Cancel, and the answer. One started here, or running when the window opened (a reload,
 * another window), re-attached through the jobs store.
 */
export const useLoaderBenchStore = defineStore('loader-bench', () => {
  /** The latest datasets.benchmarkProgress event of the job followed. */
  const progress = shallowRef<LoaderBenchProgress | null>(null);
  /** Rows as each setting ends (the answer's rows once it comes). */
  const rows = shallowRef<LoaderRows>({ cached: [], uncached: [] });
  /** The finished benchmark's answer; null while one runs, or when it failed or was cancelled. */
  const result = shallowRef<LoaderBenchResult | null>(null);
  /** Set when the person cancelled it: what it measured stays in its run. */
  const stopped = shallowRef<LoaderBenchStopped | null>(null);
  /** The dataset measured (from the request: a re-attached job names it too). */
  const dataset = ref<string | null>(null);
  const job = useJob({
    'datasets.benchmarkProgress': (p) => {
      progress.value = p;
      if (p.row) rows.value = { ...rows.value, [p.path]: [...rows.value[p.path], p.row] };
    },
  });
  const running = job.running;
  /** The failure as the page shows it; a cancel is not one (see stopped). */
  const error = computed(() => (job.failure.value?.code === 'E_CANCELLED' ? null : job.error.value));
  const status = computed(() => loaderProgressText(progress.value, job.cancelling.value));

  async function follow(name: string | null, go: () => Promise<LoaderBenchResult | null>): Promise<LoaderBenchResult | null> {
    progress.value = null;
    rows.value = { cached: [], uncached: [] };
    result.value = null;
    stopped.value = null;
    dataset.value = name;
    const answer = await go();
    if (answer) {
      result.value = answer;
      rows.value = { cached: answer.cached, uncached: answer.uncached ?? [] };
    } else if (job.failure.value?.code === 'E_CANCELLED') {
      // Set by the events while `go` ran (the compiler still sees the null assigned above).
      const p = progress.value as LoaderBenchProgress | null;
      stopped.value = { runId: p?.runId ?? null, done: p?.done ?? 0, total: p?.total ?? 0 };
    }
    return answer;
  }

  /** Measures the loader on a cache at each setting (and on its source files, where they allow it). */
  async function start(request: Omit<MethodParams<'datasets.benchmark'>, 'jobId'>): Promise<LoaderBenchResult | null> {
    if (running.value) return null;
    return follow(request.dataset, () => job.start('datasets.benchmark', request));
  }

  /**
   * The workbench's sweep of one cache: cached and from the source files, at 0, 1 and 2 workers, a second each, in
   * batches of 256 (all the records drawn, for a smaller dataset: a batch larger than an epoch is refused).
   */
  function sweep(dataset: { id: string; records: number }, sampleRatio = 1): Promise<LoaderBenchResult | null> {
    return start({ dataset: dataset.id, batchSize: loaderBenchBatch(dataset.records, sampleRatio), workers: [0, 1, 2], prefetch: [2], sampleRatio, maxSeconds: 1 });
  }

  /** Follows a loader benchmark started elsewhere to its end. */
  async function attach(info: JobInfo): Promise<LoaderBenchResult | null> {
    if (running.value || info.method !== 'datasets.benchmark') return null;
    const name = (info.request as { dataset?: unknown }).dataset;
    return follow(typeof name === 'string' ? name : null, () => job.attach({ ...info, method: 'datasets.benchmark' }));
  }
  useJobsStore().adopt('loader', null, (info) => void attach(info));

  /** Stops it when the setting in flight ends; the run keeps the settings measured. */
  async function cancel(): Promise<void> {
    await job.cancel();
  }

  /** Forgets the last benchmark (a new import starts); not while one runs. */
  function clear(): void {
    if (running.value) return;
    progress.value = null;
    rows.value = { cached: [], uncached: [] };
    result.value = null;
    stopped.value = null;
    job.error.value = null;
    job.failure.value = null;
  }

  return { progress, rows, result, stopped, dataset, running, cancelling: job.cancelling, error, status, start, sweep, attach, cancel, clear };
});
