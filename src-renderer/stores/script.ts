import { ApiError } from '@api/errors';
import type { ScriptBenchmarkRequestInput, ScriptBenchmarkResult, ScriptOutputEvent } from '@api/script-target';
import { ScriptBenchmarkResultSchema } from '@api/script-target';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';
import { errorText } from './error-text';
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

/** The running script job: form, confirmation, live output, result, Cancel. */
export const useScriptStore = defineStore('script', () => {
  const form = ref<ScriptForm>(emptyScriptForm());
  /** The request waiting for "Run this command?"; null when nothing waits. */
  const pending = shallowRef<ScriptBenchmarkRequestInput | null>(null);
  const buffer = scriptOutputBuffer();
  const output = buffer.lines;
  const result = shallowRef<ScriptBenchmarkResult | null>(null);
  const running = ref(false);
  const error = ref<string | null>(null);
  /** Set when the shell refuses script targets (serve mode without --allow-scripts). */
  const forbidden = ref<string | null>(null);
  const jobId = ref<string | null>(null);
  /** Completed script benchmarks in the workspace (runs of kind benchmark whose target is a script), oldest first. */
  const history = shallowRef<ScriptBenchmarkResult[]>([]);

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

  /** Runs the confirmed request, collecting its output lines live. */
  async function confirm(): Promise<void> {
    const request = pending.value;
    if (!request || running.value) return;
    pending.value = null;
    const client = useApiClient();
    const id = `script-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    jobId.value = id;
    buffer.clear();
    result.value = null;
    error.value = null;
    forbidden.value = null;
    running.value = true;
    const off = client.on('script.output', (e: ScriptOutputEvent) => {
      if (e.jobId !== id) return;
      buffer.push(e);
    });
    try {
      result.value = await client.call('script.benchmark', { ...request, jobId: id });
      await refresh();
    } catch (err) {
      if (err instanceof ApiError && err.code === 'E_FORBIDDEN') forbidden.value = err.message;
      else error.value = errorText(err);
    } finally {
      off();
      running.value = false;
    }
  }

  /** Stops the running job (its process group is killed by the main process). */
  async function cancel(): Promise<void> {
    if (!jobId.value || !running.value) return;
    try {
      await useApiClient().call('script.cancel', { jobId: jobId.value });
    } catch (err) {
      error.value = errorText(err);
    }
  }

  return { form, pending, output, result, history, running, error, forbidden, jobId, prepare, dismiss, confirm, cancel, refresh };
});
