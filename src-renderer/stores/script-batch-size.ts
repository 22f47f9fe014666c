import type { JobInfo } from '@api/jobs';
import type { ScriptBatchSearchRequestInput, ScriptBatchSearchResult, ScriptBatchTrial, ScriptBatchTrialEvent, ScriptOutputEvent } from '@api/script-target';
import { ScriptBatchSearchRequestSchema } from '@api/script-target';
import { ref, shallowRef } from 'vue';

import { useJob } from '../composables/useJob';
import { useJobsStore } from './jobs';
import { scriptOutputBuffer } from './script';
import type { ScriptForm } from './script-form';
import { emptyScriptForm, scriptRequestFromForm } from './script-form';

/** The search's own numbers, in the units a person types. */
export interface ScriptSearchNumbers {
  startBatch: number;
  maxBatch: number;
  warmupSteps: number;
  stepsPerTrial: number;
  /** Percent of the GPU's memory a fitting batch leaves free (CUDA only). */
  headroomPct: number;
  timeoutSeconds: number;
}

export function defaultSearchNumbers(): ScriptSearchNumbers {
  const d = ScriptBatchSearchRequestSchema.parse({ target: { kind: 'script', command: ['x'], cwd: '/' } });
  return { startBatch: d.startBatch, maxBatch: d.maxBatch, warmupSteps: d.warmupSteps, stepsPerTrial: d.stepsPerTrial, headroomPct: Math.round(d.headroom * 100), timeoutSeconds: d.timeoutSeconds };
}

/** The search request the form describes, checked by the API's schema; throws with the bad field named. */
export function scriptSearchFromForm(form: ScriptForm, numbers: ScriptSearchNumbers): ScriptBatchSearchRequestInput {
  const { target, overrides = {} } = scriptRequestFromForm(form);
  if ('dataloader.batch_size' in overrides) throw new Error('dataloader.batch_size is what the search varies: remove that override');
  const request: ScriptBatchSearchRequestInput = {
    target,
    overrides,
    startBatch: numbers.startBatch,
    maxBatch: numbers.maxBatch,
    warmupSteps: numbers.warmupSteps,
    stepsPerTrial: numbers.stepsPerTrial,
    headroom: numbers.headroomPct / 100,
    timeoutSeconds: numbers.timeoutSeconds,
  };
  const checked = ScriptBatchSearchRequestSchema.safeParse(request);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw new Error(`${issue.path.join('.') || 'request'}: ${issue.message}`);
  }
  if (numbers.startBatch > numbers.maxBatch) throw new Error(`start batch ${numbers.startBatch} is above the max batch ${numbers.maxBatch}`);
  return request;
}

/**
 * The Batch size area's Script side (the area's one store, stores/batch-size.ts, holds it beside the engine's):
 * form, confirmation, trials and output live, verdict, Cancel. The search followed is one started here, or one
 * running when the window opened (a reload, another window), re-attached through the jobs store.
 */
export function scriptBatchSearch() {
  const form = ref<ScriptForm>(emptyScriptForm());
  const numbers = ref<ScriptSearchNumbers>(defaultSearchNumbers());
  /** The request waiting for "Run this command?"; null when nothing waits. */
  const pending = shallowRef<ScriptBatchSearchRequestInput | null>(null);
  /** Trials of the running (or last) search, in the order they ran. */
  const trials = shallowRef<ScriptBatchTrial[]>([]);
  const buffer = scriptOutputBuffer();
  const output = buffer.lines;
  const result = shallowRef<ScriptBatchSearchResult | null>(null);
  /** True from "Run" (or attaching) to the end of the search. */
  const running = ref(false);
  const error = ref<string | null>(null);
  /** Set when the shell refuses script targets (serve mode without --allow-scripts). */
  const forbidden = ref<string | null>(null);

  const job = useJob({
    'script.batchTrial': (e: ScriptBatchTrialEvent) => (trials.value = [...trials.value, e.trial]),
    'script.output': (e: ScriptOutputEvent) => buffer.push(e),
  });
  /** The search's job id, chosen before it starts, so its events and Cancel are this search's only. */
  const jobId = job.jobId;

  /** Checks the form and asks for confirmation; nothing runs yet. */
  function prepare(): void {
    error.value = null;
    try {
      pending.value = scriptSearchFromForm(form.value, numbers.value);
    } catch (err) {
      pending.value = null;
      error.value = err instanceof Error ? err.message : String(err);
    }
  }

  function dismiss(): void {
    pending.value = null;
  }

  /** Collects one search's trials and the script's output while `follow` lasts. */
  async function watch(follow: () => Promise<ScriptBatchSearchResult | null>): Promise<void> {
    trials.value = [];
    buffer.clear();
    result.value = null;
    error.value = null;
    forbidden.value = null;
    running.value = true;
    try {
      result.value = await follow();
      if (result.value) trials.value = result.value.trials;
      const failure = job.failure.value;
      if (failure?.code === 'E_FORBIDDEN') forbidden.value = failure.message;
      else if (failure) error.value = job.error.value;
    } finally {
      running.value = false;
    }
  }

  /** Runs the confirmed search, collecting its trials and the script's output live; resolves when it ends. */
  async function confirm(): Promise<void> {
    const request = pending.value;
    if (!request || running.value) return;
    pending.value = null;
    await watch(() => job.start('batchSize.search', request));
  }

  /** Follows a search started elsewhere (before a reload, in another window) to its end. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value) return;
    pending.value = null;
    await watch(() => job.attach({ ...info, method: 'batchSize.search', target: 'script' as const }));
  }
  useJobsStore().adopt('batchSize', 'script', (info) => void attach(info));

  /** Stops the search: the trial in flight is killed with its process group, and the run is recorded cancelled. */
  async function cancel(): Promise<void> {
    if (!running.value) return;
    await job.cancel();
    if (job.error.value) error.value = job.error.value;
  }

  return { form, numbers, pending, trials, output, result, running, error, forbidden, jobId, cancelling: job.cancelling, attached: job.attached, prepare, dismiss, confirm, attach, cancel };
}
