import type { JobInfo } from '@api/jobs';
import type { ScriptBenchmarkRequestInput, ScriptBenchmarkResult, ScriptOutputEvent } from '@api/script-target';
import { ScriptBenchmarkResultSchema } from '@api/script-target';
import { ref, shallowRef } from 'vue';

import { useJob } from '../composables/useJob';
import { useApiClient } from '../transport/client-instance';
import { errorText } from './error-text';
import { useJobsStore } from './jobs';
import { emptyScriptForm, scriptRequestFromForm } from './script-form';
import type { ScriptForm } from './script-form';

/** Lines of output kept: a long run would otherwise grow the page without bound. */
export const SCRIPT_OUTPUT_LINES = 3000;

export interface ScriptLine {
  n: number;
  stream: 'stdout' | 'stderr';
  repetition: number;
  line: string;
}

/** A job's output as the page shows it: its last SCRIPT_OUTPUT_LINES lines, numbered as they came. */
export function scriptOutputBuffer() {
  const lines = shallowRef<ScriptLine[]>([]);
  let count = 0;
  return {
    lines,
    clear(): void {
      lines.value = [];
      count = 0;
    },
    push(e: Pick<ScriptOutputEvent, 'stream' | 'repetition' | 'line'>): void {
      count += 1;
      const next = [...lines.value, { n: count, stream: e.stream, repetition: e.repetition, line: e.line }];
      lines.value = next.length > SCRIPT_OUTPUT_LINES ? next.slice(next.length - SCRIPT_OUTPUT_LINES) : next;
    },
  };
}

/**
 * The Benchmarks area's Script side (the area's one store, stores/benchmarks.ts, holds it beside the
 * engine's): form, confirmation, live output, result, Cancel. The job followed is one started here, or
 * one running when the window opened (a reload, another window), re-attached through the jobs store.
 */
export function scriptBenchmark() {
  const form = ref<ScriptForm>(emptyScriptForm());
  /** The request waiting for "Run this command?"; null when nothing waits. */
  const pending = shallowRef<ScriptBenchmarkRequestInput | null>(null);
  const buffer = scriptOutputBuffer();
  const output = buffer.lines;
  const result = shallowRef<ScriptBenchmarkResult | null>(null);
  /** True from "Run" (or attaching) to the end of the job. */
  const running = ref(false);
  const error = ref<string | null>(null);
  /** Set when the shell refuses script targets (serve mode without --allow-scripts). */
  const forbidden = ref<string | null>(null);
  /** Completed script benchmarks in the workspace (runs of kind benchmark whose target is a script), oldest first. */
  const history = shallowRef<ScriptBenchmarkResult[]>([]);

  const job = useJob({ 'script.output': (e: ScriptOutputEvent) => buffer.push(e) });
  /** The job's id, chosen before it starts, so its output and Cancel are this job's only. */
  const jobId = job.jobId;

  /** Reads the completed script benchmarks' results from their run.json. */
  async function refresh(): Promise<void> {
    const client = useApiClient();
    try {
      const runs = (await client.call('runs.list', {})).filter((r) => r.kind === 'benchmark' && r.status === 'completed').slice(0, 20);
      const details = await Promise.all(runs.map((r) => client.call('runs.get', { id: r.id })));
      history.value = details
        .map((d) => ScriptBenchmarkResultSchema.safeParse((d.record as { result?: unknown }).result))
        .flatMap((p) => (p.success ? [p.data] : []))
        .reverse();
    } catch (err) {
      error.value = errorText(err);
    }
  }

  /** Checks the form and asks for confirmation; nothing runs yet. */
  function prepare(): void {
    error.value = null;
    try {
      pending.value = scriptRequestFromForm(form.value);
    } catch (err) {
      pending.value = null;
      error.value = err instanceof Error ? err.message : String(err);
    }
  }

  function dismiss(): void {
    pending.value = null;
  }

  /** Collects the job's output while `follow` lasts; a finished benchmark is listed at once. */
  async function watch(follow: () => Promise<ScriptBenchmarkResult | null>): Promise<void> {
    buffer.clear();
    result.value = null;
    error.value = null;
    forbidden.value = null;
    running.value = true;
    try {
      result.value = await follow();
      const failure = job.failure.value;
      if (failure?.code === 'E_FORBIDDEN') forbidden.value = failure.message;
      else if (failure) error.value = job.error.value;
      if (result.value) await refresh();
    } finally {
      running.value = false;
    }
  }

  /** Runs the confirmed request, collecting its output lines live. */
  async function confirm(): Promise<void> {
    const request = pending.value;
    if (!request || running.value) return;
    pending.value = null;
    await watch(() => job.start('benchmark.training', request));
  }

  /** Follows a script benchmark started elsewhere (before a reload, in another window) to its end. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value) return;
    pending.value = null;
    await watch(() => job.attach({ ...info, method: 'benchmark.training', target: 'script' as const }));
  }
  useJobsStore().adopt('benchmark', 'script', (info) => void attach(info));

  /** Stops the running job (its process group is killed by the main process). */
  async function cancel(): Promise<void> {
    if (!running.value) return;
    await job.cancel();
    if (job.error.value) error.value = job.error.value;
  }

  return { form, pending, output, result, history, running, error, forbidden, jobId, cancelling: job.cancelling, attached: job.attached, prepare, dismiss, confirm, attach, cancel, refresh };
}
