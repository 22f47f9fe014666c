import type { BenchmarkProgress, TrainingBenchmarkRequestInput } from '@api/benchmark';
import type { BenchmarkResult, EngineBenchmarkResult, ScriptBenchmarkResult } from '@api/benchmark-result';
import { BenchmarkResultSchema, isEngineBenchmark, isScriptBenchmark } from '@api/benchmark-result';
import type { ScriptBenchmarkRequestInput, ScriptOutputEvent } from '@api/script-target';
import { ScriptBenchmarkRequestSchema } from '@api/script-target';
import type { RunDetail } from '@api/training';
import type { JobInfo, TargetKind } from '@api/jobs';
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';

import { useJob } from '../composables/useJob';
import { scriptOutputBuffer, useScriptJob } from '../composables/useScriptJob';
import { followRunningTarget } from '../composables/useTargetSwitch';
import { useApiClient } from '../transport/client-instance';
import type { ScriptStatus } from '../view-models/script-status';
import { scriptBenchmarkStatus } from '../view-models/script-status';
import { errorText } from './error-text';
import { useJobsStore } from './jobs';
import { useLoader } from './load-state';
import type { ScriptForm } from '../view-models/script-target-form';
import { emptyScriptForm, scriptBenchmarkFormOf, scriptRequestFromForm } from '../view-models/script-target-form';

/**
 * The benchmark results of one target among run details, oldest first. A run recorded by an older Trainbench whose
 * result no longer reads is left out of the comparison.
 */
function resultsOf<T extends BenchmarkResult>(details: readonly RunDetail[], is: (r: BenchmarkResult) => r is T): T[] {
  return details
    .map((d) => BenchmarkResultSchema.safeParse((d.record as { result?: unknown }).result))
    .flatMap((p) => (p.success && is(p.data) ? [p.data] : []))
    .reverse();
}

/** How many of the newest benchmarks are compared side by side. */
export const COMPARED_BENCHMARKS = 8;

/**
 * What only a script's benchmark has (the area's one store below holds it as `script`): the script target's form,
 * confirmation, live output, the status line, its results, Cancel. The job followed is one started here, or one
 * running when the window opened (a reload, another window), re-attached through the jobs store.
 */
function scriptBenchmark() {
  const form = ref<ScriptForm>(emptyScriptForm());
  const buffer = scriptOutputBuffer();
  /** Completed script benchmarks in the workspace (runs of kind benchmark whose target is a script), oldest first. */
  const history = shallowRef<ScriptBenchmarkResult[]>([]);
  /** The latest benchmark.progress of the job followed: the status line's numbers. */
  const progress = shallowRef<BenchmarkProgress | null>(null);
  /** A job across machines: the code its other nodes join with, from its first launch on. */
  const join = ref<string | null>(null);
  const side = useScriptJob<ScriptBenchmarkRequestInput, ScriptBenchmarkResult>({
    kind: 'benchmark',
    handlers: {
      'script.output': (e: ScriptOutputEvent) => buffer.push(e),
      'benchmark.progress': (p) => (progress.value = p),
      'script.join': (e) => (join.value = e.code),
    },
    request: () => scriptRequestFromForm(form.value),
    start: (job, request) => job.start('benchmark.training', request),
    attach: (job, info) => {
      // The greyed-out form shows what the re-attached benchmark runs, not the defaults.
      const request = ScriptBenchmarkRequestSchema.safeParse(info.request);
      if (request.success) form.value = scriptBenchmarkFormOf(request.data);
      return job.attach({ ...info, method: 'benchmark.training', target: 'script' as const });
    },
    clear: () => {
      buffer.clear();
      progress.value = null;
      join.value = null;
    },
    // A finished benchmark is listed at once.
    done: () => refresh(),
  });

  /** Reads the completed script benchmarks' results from their run.json. */
  async function refresh(): Promise<void> {
    const client = useApiClient();
    try {
      const runs = (await client.call('runs.list', {})).filter((r) => r.kind === 'benchmark' && r.status === 'completed').slice(0, 20);
      const details = await Promise.all(runs.map((r) => client.call('runs.get', { id: r.id })));
      history.value = resultsOf(details, isScriptBenchmark);
    } catch (err) {
      side.error.value = errorText(err);
    }
  }

  /** The line above the output: warm-up, measured step x of N, the probe's stop, or how it ended. */
  const status = computed((): ScriptStatus | null => {
    const failure = side.failure.value;
    if (side.forbidden.value) return null;
    if (side.running.value) return scriptBenchmarkStatus(progress.value, null);
    if (side.result.value) return scriptBenchmarkStatus(progress.value, { ok: true });
    if (failure) return scriptBenchmarkStatus(progress.value, { ok: false, code: failure.code, message: failure.message });
    return null;
  });

  return { ...side, form, output: buffer.lines, history, progress, join, status, refresh };
}

/**
 * Training benchmarks: the finished ones of the workspace, and the one running: started from this
 * window, or running when it opened (a reload, another window), re-attached through the jobs store.
 */
export const useBenchmarksStore = defineStore('benchmarks', () => {
  /** Completed benchmark runs, oldest first (the order they are compared in), at most COMPARED_BENCHMARKS. */
  const results = shallowRef<EngineBenchmarkResult[]>([]);
  /** The latest progress of the running benchmark; null when none runs. */
  const progress = shallowRef<BenchmarkProgress | null>(null);
  /** True from Start (or attaching) to the benchmark's end. */
  const running = ref(false);
  /** refresh() reads the completed benchmark runs (their run.json results) from the workspace. */
  const { loading, error, run: refresh } = useLoader(async () => {
    const client = useApiClient();
    const runs = (await client.call('runs.list', {})).filter((r) => r.kind === 'benchmark' && r.status === 'completed').slice(0, COMPARED_BENCHMARKS);
    const details = await Promise.all(runs.map((r) => client.call('runs.get', { id: r.id })));
    // A run recorded by an older Trainbench whose result no longer matches is left out of the comparison.
    results.value = resultsOf(details, isEngineBenchmark);
  });

  const job = useJob({ 'benchmark.progress': (p) => (progress.value = p) });

  /** Follows one benchmark while `follow` lasts; the list is read again when it ends. */
  async function watch(follow: () => Promise<BenchmarkResult | null>): Promise<void> {
    error.value = null;
    running.value = true;
    progress.value = null;
    try {
      await follow();
    } finally {
      running.value = false;
      progress.value = null;
      await refresh();
      // The refresh clears the error; the benchmark's own failure is the one to show.
      if (job.error.value) error.value = job.error.value;
    }
  }

  /** Runs a benchmark to completion, following its progress; the list is refreshed when it ends. */
  async function start(request: Omit<TrainingBenchmarkRequestInput, 'jobId'>): Promise<void> {
    if (running.value) return;
    await watch(() => job.start('benchmark.training', request));
  }

  /** Follows a benchmark started elsewhere (before a reload, in another window) to its end. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value || info.method !== 'benchmark.training') return;
    await watch(() => job.attach({ ...info, method: 'benchmark.training' }));
  }
  useJobsStore().adopt('benchmark', 'engine', (info) => void attach(info));

  /** Asks the running benchmark to stop at its next step; its run is kept as cancelled. */
  async function cancel(): Promise<void> {
    if (!running.value) return;
    await job.cancel();
    if (job.error.value) error.value = job.error.value;
  }

  /** Which target the area shows: the switch follows whichever side's benchmark runs (here, re-attached, or elsewhere). */
  const target = ref<TargetKind>('engine');
  const script = scriptBenchmark();
  followRunningTarget(target, { engine: running, script: script.running });

  return { target, results, progress, running, cancelled: job.cancelled, cancelling: job.cancelling, attached: job.attached, loading, error, refresh, start, attach, cancel, script };
});
