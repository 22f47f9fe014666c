import type { BenchmarkProgress, TrainingBenchmarkRequestInput, TrainingBenchmarkResult } from '@api/benchmark';
import { TrainingBenchmarkResultSchema } from '@api/benchmark';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';
import { errorText } from './error-text';
import { useLoader } from './load-state';

/** How many of the newest benchmarks are compared side by side. */
export const COMPARED_BENCHMARKS = 8;

/** Training benchmarks: the finished ones of the workspace, and the one running from this window. */
export const useBenchmarksStore = defineStore('benchmarks', () => {
  /** Completed benchmark runs, oldest first (the order they are compared in), at most COMPARED_BENCHMARKS. */
  const results = shallowRef<TrainingBenchmarkResult[]>([]);
  /** The latest progress of the running benchmark; null when none runs. */
  const progress = shallowRef<BenchmarkProgress | null>(null);
  const running = ref(false);
  /** refresh() reads the completed benchmark runs (their run.json results) from the workspace. */
  const { loading, error, run: refresh } = useLoader(async () => {
    const client = useApiClient();
    const runs = (await client.call('runs.list', {})).filter((r) => r.kind === 'benchmark' && r.status === 'completed').slice(0, COMPARED_BENCHMARKS);
    const details = await Promise.all(runs.map((r) => client.call('runs.get', { id: r.id })));
    // A run recorded by an older Trainbench whose result no longer matches is left out of the comparison.
    results.value = details
      .map((d) => TrainingBenchmarkResultSchema.safeParse((d.record as { result?: unknown }).result))
      .flatMap((p) => (p.success ? [p.data] : []))
      .reverse();
  });
  let jobId: string | null = null;
  let offProgress: (() => void) | null = null;

  /** Runs a benchmark to completion, following its progress; the list is refreshed when it ends. */
  async function start(request: Omit<TrainingBenchmarkRequestInput, 'jobId'>): Promise<void> {
    if (running.value) return;
    const client = useApiClient();
    const id = `ui-bench-${Date.now().toString(36)}`;
    jobId = id;
    error.value = null;
    running.value = true;
    progress.value = null;
    offProgress = client.on('benchmark.progress', (p) => {
      if (p.jobId === id) progress.value = p;
    });
    let failure: string | null = null;
    try {
      await client.call('benchmark.training', { ...request, jobId: id });
    } catch (err) {
      failure = errorText(err);
    } finally {
      offProgress?.();
      offProgress = null;
      running.value = false;
      jobId = null;
      progress.value = null;
      await refresh();
      // The refresh clears the error; the benchmark's own failure is the one to show.
      if (failure) error.value = failure;
    }
  }

  /** Asks the running benchmark to stop at its next step; its run is kept as cancelled. */
  async function cancel(): Promise<void> {
    if (!jobId) return;
    try {
      await useApiClient().call('benchmark.cancel', { jobId });
    } catch (err) {
      error.value = errorText(err);
    }
  }

  return { results, progress, running, loading, error, refresh, start, cancel };
});
