import type { ScriptBatchSearchRequestInput, ScriptBatchSearchResult, ScriptBatchTrial, ScriptBatchTrialEvent, ScriptOutputEvent } from '@api/script-target';
import { ScriptBatchSearchRequestSchema } from '@api/script-target';
import { computed, ref, shallowRef } from 'vue';

import { useScriptJob } from '../composables/useScriptJob';
import type { ScriptStatus } from '../view-models/script-status';
import { scriptBatchStatus } from '../view-models/script-status';
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
  /** Trials of the running (or last) search, in the order they ran. */
  const trials = shallowRef<ScriptBatchTrial[]>([]);
  const buffer = scriptOutputBuffer();
  const side = useScriptJob<ScriptBatchSearchRequestInput, ScriptBatchSearchResult>({
    kind: 'batchSize',
    handlers: {
      'script.batchTrial': (e: ScriptBatchTrialEvent) => (trials.value = [...trials.value, e.trial]),
      'script.output': (e: ScriptOutputEvent) => buffer.push(e),
    },
    request: () => scriptSearchFromForm(form.value, numbers.value),
    start: (job, request) => job.start('batchSize.search', request),
    attach: (job, info) => job.attach({ ...info, method: 'batchSize.search', target: 'script' as const }),
    clear: () => {
      trials.value = [];
      buffer.clear();
    },
    // The answer's list is the whole one, in order.
    done: (result) => {
      trials.value = result.trials;
    },
  });

  /** The line above the output: the last trial's outcome while the next one starts, then how the search ended. */
  const status = computed((): ScriptStatus | null => {
    const failure = side.failure.value;
    if (side.forbidden.value) return null;
    if (side.running.value) return scriptBatchStatus(trials.value, null);
    if (side.result.value) return scriptBatchStatus(trials.value, { ok: true });
    if (failure) return scriptBatchStatus(trials.value, { ok: false, code: failure.code, message: failure.message });
    return null;
  });

  return { ...side, form, numbers, trials, output: buffer.lines, status };
}
