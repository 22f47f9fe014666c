import { ApiError } from '@api/errors';
import { runIdAt } from '@api/ids';
import type { ScriptProgressEvent, ScriptTrainRequestInput, ScriptTrainResult } from '@api/script-run';
import type { ScriptOutputEvent } from '@api/script-target';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';
import { errorText } from './error-text';
import type { ScriptLine } from './script';
import { SCRIPT_OUTPUT_LINES } from './script';

/** How often arrived output lines are handed to the page: a script printing every step writes thousands a second. */
const OUTPUT_FLUSH_MS = 100;

function randomHex(n: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The script training run started from the Runs area: confirmation, progress, live output, Cancel. */
export const useScriptRunStore = defineStore('script-run', () => {
  /** The request waiting for "Run this command?"; null when nothing waits. */
  const pending = shallowRef<ScriptTrainRequestInput | null>(null);
  const running = ref(false);
  /** The run's id, chosen here before it starts, so its events and Cancel are this run's only. */
  const runId = ref<string | null>(null);
  /** The newest progress point; the full series go to listeners (charts append). */
  const last = shallowRef<ScriptProgressEvent | null>(null);
  const output = shallowRef<ScriptLine[]>([]);
  const result = shallowRef<ScriptTrainResult | null>(null);
  const error = ref<string | null>(null);
  /** Set when the shell refuses script targets (serve mode without --allow-scripts). */
  const forbidden = ref<string | null>(null);
  const cancelling = ref(false);
  const listeners = new Set<(p: ScriptProgressEvent) => void>();

  function ask(request: ScriptTrainRequestInput): void {
    error.value = null;
    forbidden.value = null;
    pending.value = request;
  }
  function dismiss(): void {
    pending.value = null;
  }

  /** Runs the confirmed request to its end, following this run's events only. */
  async function confirm(): Promise<ScriptTrainResult | null> {
    const request = pending.value;
    if (!request || running.value) return null;
    pending.value = null;
    const client = useApiClient();
    const id = runIdAt(new Date(), randomHex(3));
    runId.value = id;
    running.value = true;
    cancelling.value = false;
    last.value = null;
    result.value = null;
    error.value = null;
    forbidden.value = null;
    output.value = [];
    let count = 0;
    let arrived: ScriptLine[] = [];
    const flush = () => {
      if (arrived.length === 0) return;
      const next = output.value.concat(arrived);
      arrived = [];
      output.value = next.length > SCRIPT_OUTPUT_LINES ? next.slice(next.length - SCRIPT_OUTPUT_LINES) : next;
    };
    const timer = setInterval(flush, OUTPUT_FLUSH_MS);
    const offOutput = client.on('script.output', (e: ScriptOutputEvent) => {
      if (e.runId !== id) return;
      arrived.push({ n: ++count, stream: e.stream, repetition: e.repetition, line: e.line });
      if (arrived.length > SCRIPT_OUTPUT_LINES) arrived = arrived.slice(arrived.length - SCRIPT_OUTPUT_LINES);
    });
    const offProgress = client.on('script.progress', (p) => {
      if (p.runId !== id) return;
      last.value = p;
      for (const l of listeners) l(p);
    });
    try {
      result.value = await client.call('script.train', { ...request, runId: id });
      return result.value;
    } catch (err) {
      if (err instanceof ApiError && err.code === 'E_FORBIDDEN') forbidden.value = err.message;
      else error.value = errorText(err);
      return null;
    } finally {
      offOutput();
      offProgress();
      clearInterval(timer);
      flush();
      running.value = false;
    }
  }

  /** Kills the run's process tree; the run is recorded as cancelled. */
  async function cancel(): Promise<void> {
    if (!runId.value || !running.value) return;
    cancelling.value = true;
    try {
      await useApiClient().call('script.cancel', { jobId: runId.value });
    } catch (err) {
      error.value = errorText(err);
    }
  }

  function onProgress(l: (p: ScriptProgressEvent) => void): () => void {
    listeners.add(l);
    return () => listeners.delete(l);
  }

  return { pending, running, runId, last, output, result, error, forbidden, cancelling, ask, dismiss, confirm, cancel, onProgress };
});
