import type { BenchmarkProgress } from '@api/benchmark';
import type { ScriptBenchmarkRequestInput, ScriptBenchmarkResult, ScriptOutputEvent } from '@api/script-target';
import { ScriptBenchmarkResultSchema } from '@api/script-target';
import { computed, ref, shallowRef } from 'vue';

import type { ScriptStatus } from '../view-models/script-status';
import { scriptBenchmarkStatus } from '../view-models/script-status';
import { useScriptJob } from '../composables/useScriptJob';
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

/**
 * The Benchmarks area's Script side (the area's one store, stores/benchmarks.ts, holds it beside the
 * engine's): form, confirmation, live output, result, Cancel. The job followed is one started here, or
 * one running when the window opened (a reload, another window), re-attached through the jobs store.
 */
export function scriptBenchmark() {
  const form = ref<ScriptForm>(emptyScriptForm());
  const buffer = scriptOutputBuffer();
  /** Completed script benchmarks in the workspace (runs of kind benchmark whose target is a script), oldest first. */
  const history = shallowRef<ScriptBenchmarkResult[]>([]);
  /** The latest benchmark.progress of the job followed: the status line's numbers. */
  const progress = shallowRef<BenchmarkProgress | null>(null);
  const side = useScriptJob<ScriptBenchmarkRequestInput, ScriptBenchmarkResult>({
    kind: 'benchmark',
    handlers: {
      'script.output': (e: ScriptOutputEvent) => buffer.push(e),
      'benchmark.progress': (p) => (progress.value = p),
    },
    request: () => scriptRequestFromForm(form.value),
    start: (job, request) => job.start('benchmark.training', request),
    attach: (job, info) => job.attach({ ...info, method: 'benchmark.training', target: 'script' as const }),
    clear: () => {
      buffer.clear();
      progress.value = null;
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
      history.value = details
        .map((d) => ScriptBenchmarkResultSchema.safeParse((d.record as { result?: unknown }).result))
        .flatMap((p) => (p.success ? [p.data] : []))
        .reverse();
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

  return { ...side, form, output: buffer.lines, history, progress, status, refresh };
}
