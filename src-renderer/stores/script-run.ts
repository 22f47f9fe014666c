import type { JobInfo } from '@api/jobs';
import type { ScriptProgressEvent, ScriptTrainRequestInput, ScriptTrainResult } from '@api/script-run';
import type { ScriptOutputEvent } from '@api/script-target';
import { computed, shallowRef } from 'vue';

import { useJob } from '../composables/useJob';
import { useJobsStore } from './jobs';
import type { ScriptLine } from './script';
import { SCRIPT_OUTPUT_LINES } from './script';

/** How often arrived output lines are handed to the page: a script printing every step writes thousands a second. */
const OUTPUT_FLUSH_MS = 100;

/**
 * The Runs area's Script side (the area's one store, stores/live-run.ts, holds it beside the engine's): the
 * script training run it follows, confirmation, progress, live output, Cancel. One started here, or one
 * running when the window opened (re-attached through the jobs store).
 */
export function scriptRun() {
  /** The request waiting for "Run this command?"; null when nothing waits. */
  const pending = shallowRef<ScriptTrainRequestInput | null>(null);
  /** The newest progress point; the full series go to listeners (charts append). */
  const last = shallowRef<ScriptProgressEvent | null>(null);
  const output = shallowRef<ScriptLine[]>([]);
  const result = shallowRef<ScriptTrainResult | null>(null);
  const listeners = new Set<(p: ScriptProgressEvent) => void>();
  let count = 0;
  let arrived: ScriptLine[] = [];

  const job = useJob({
    'script.output': (e: ScriptOutputEvent) => {
      arrived.push({ n: ++count, stream: e.stream, repetition: e.repetition, line: e.line });
      if (arrived.length > SCRIPT_OUTPUT_LINES) arrived = arrived.slice(arrived.length - SCRIPT_OUTPUT_LINES);
    },
    'script.progress': (p) => {
      last.value = p;
      for (const l of listeners) l(p);
    },
  });
  const { running, cancelling, error } = job;
  /** The run's id, chosen before it starts, so its events and Cancel are this run's only. */
  const runId = job.jobId;
  /** Set when the shell refuses script targets (serve mode without --allow-scripts). */
  const forbidden = computed(() => (job.failure.value?.code === 'E_FORBIDDEN' ? job.failure.value.message : null));

  function ask(request: ScriptTrainRequestInput): void {
    job.error.value = null;
    job.failure.value = null;
    pending.value = request;
  }
  function dismiss(): void {
    pending.value = null;
  }

  /** Collects the run's output (handed to the page in batches: a script may print thousands of lines a second) while `follow` lasts. */
  async function watch(follow: () => Promise<ScriptTrainResult | null>): Promise<ScriptTrainResult | null> {
    last.value = null;
    result.value = null;
    output.value = [];
    count = 0;
    arrived = [];
    const flush = () => {
      if (arrived.length === 0) return;
      const next = output.value.concat(arrived);
      arrived = [];
      output.value = next.length > SCRIPT_OUTPUT_LINES ? next.slice(next.length - SCRIPT_OUTPUT_LINES) : next;
    };
    const timer = setInterval(flush, OUTPUT_FLUSH_MS);
    try {
      result.value = await follow();
      return result.value;
    } finally {
      clearInterval(timer);
      flush();
    }
  }

  /** Runs the confirmed request to its end, following this run's events only. */
  async function confirm(): Promise<ScriptTrainResult | null> {
    const request = pending.value;
    if (!request || running.value) return null;
    pending.value = null;
    return watch(() => job.start('train.run', request));
  }

  /** Follows a script run started elsewhere (before a reload, in another window) to its end. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value) return;
    await watch(() => job.attach({ ...info, method: 'train.run', target: 'script' as const }));
  }
  useJobsStore().adopt('train', 'script', (info) => void attach(info));

  /** Kills the run's process tree; the run is recorded as cancelled. */
  async function cancel(): Promise<void> {
    await job.cancel();
  }

  function onProgress(l: (p: ScriptProgressEvent) => void): () => void {
    listeners.add(l);
    return () => listeners.delete(l);
  }

  return { pending, running, runId, last, output, result, error, cancelled: job.cancelled, forbidden, cancelling, attached: job.attached, ask, dismiss, confirm, attach, cancel, onProgress };
}
