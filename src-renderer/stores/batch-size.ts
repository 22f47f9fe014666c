import type { BatchSearchProgress, BatchSearchRequest, BatchSearchResult, BatchTrial } from '@api/batch-size';
import type { ScriptBatchSearchRequest, ScriptBatchSearchRequestInput, ScriptOutputEvent } from '@api/script-target';
import { ScriptBatchSearchRequestSchema } from '@api/script-target';
import { BatchSearchRequestSchema, BatchSearchResultSchema, DEFAULT_HEADROOM } from '@api/batch-size';
import type { BuiltinModelName, ModelSpec } from '@api/model-spec';
import { BUILTIN_MODELS } from '@api/model-spec';
import type { JobInfo, TargetKind } from '@api/jobs';
import { RECIPES } from '@api/recipes';
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';

import { useJob } from '../composables/useJob';
import { scriptOutputBuffer, useScriptJob } from '../composables/useScriptJob';
import { followRunningTarget } from '../composables/useTargetSwitch';
import { dataSourceOf } from '../composables/useTargetChoices';
import type { ScriptStatus } from '../view-models/script-status';
import { scriptBatchStatus } from '../view-models/script-status';
import { useApiClient } from '../transport/client-instance';
import { dataChoiceOf } from '../composables/useTargetChoices';
import { errorText } from './error-text';
import { useJobsStore } from './jobs';
import type { ModelChoices } from '../view-models/model-choice';
import { modelChoiceOf } from '../view-models/model-choice';
import type { ScriptForm } from '../view-models/script-target-form';
import { emptyScriptForm, scriptFieldsOf, scriptRequestFromForm } from '../view-models/script-target-form';

/** The form of the Batch size area, in the units a person types. */
export interface BatchSearchForm {
  /** A built-in's name, 'sized:<family>' (sized to the chosen dataset) or a workspace spec file's path. */
  model: string;
  /** A data select value (useTargetChoices): a built-in source or one of the workspace's datasets. */
  data: string;
  device: string;
  /** CPU only: the memory the search may fill, in MiB. */
  memoryLimitMiB: number;
  /** Percent of the memory kept free. */
  headroomPct: number;
  /** Empty: no global batch to keep. */
  globalBatch: number | null;
  stepsPerTrial: number;
}

/** A script search's own numbers, in the units a person types. */
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
 * The form's values a search's request was made with (one re-attached after a reload or from another window,
 * or reopened from its run), so the form shows what was searched. The model and data are the form's choices
 * that give the request's again; where the form has none (a spec or files given to the CLI) `keep`'s stay.
 */
export function batchFormOf(r: BatchSearchRequest, choices: ModelChoices, keep: Pick<BatchSearchForm, 'model' | 'data' | 'memoryLimitMiB'>): BatchSearchForm {
  const data = dataChoiceOf(r.data) ?? keep.data;
  return {
    model: modelChoiceOf(r.spec, data, choices.datasets, choices.models) ?? keep.model,
    data,
    device: r.options.device,
    memoryLimitMiB: r.options.memoryLimitBytes > 0 ? r.options.memoryLimitBytes / 2 ** 20 : keep.memoryLimitMiB,
    headroomPct: Math.round(r.headroom * 100),
    globalBatch: r.globalBatch ?? null,
    stepsPerTrial: r.stepsPerTrial,
  };
}

/** A script search's numbers as its request gave them (the form's other half: scriptFieldsOf). */
export function searchNumbersOf(r: ScriptBatchSearchRequest): ScriptSearchNumbers {
  return { startBatch: r.startBatch, maxBatch: r.maxBatch, warmupSteps: r.warmupSteps, stepsPerTrial: r.stepsPerTrial, headroomPct: Math.round(r.headroom * 100), timeoutSeconds: r.timeoutSeconds };
}

/** A batch-search run's saved request (run.json's config), parsed for the target it searched; null for one this window cannot read. */
export function searchedRequestOf(config: unknown): { kind: 'engine'; request: BatchSearchRequest } | { kind: 'script'; request: ScriptBatchSearchRequest } | null {
  if (typeof config !== 'object' || config === null) return null;
  // The engine's run keeps the cache it read beside the request.
  const { cachedData: _cached, ...rest } = config as Record<string, unknown>;
  if ((rest.target as { kind?: unknown } | undefined)?.kind === 'script') {
    const parsed = ScriptBatchSearchRequestSchema.safeParse(rest);
    return parsed.success ? { kind: 'script', request: parsed.data } : null;
  }
  const parsed = BatchSearchRequestSchema.safeParse(rest);
  return parsed.success ? { kind: 'engine', request: parsed.data } : null;
}

/**
 * What only a script's search has (the area's one store below holds it as `script`): the script target's form and
 * the search's numbers, confirmation, the script's trials and output live, the status line, Cancel. The search
 * followed is one started here, or one running when the window opened, re-attached through the jobs store.
 */
function scriptBatchSearch() {
  const form = ref<ScriptForm>(emptyScriptForm());
  const numbers = ref<ScriptSearchNumbers>(defaultSearchNumbers());
  /** Trials of the running (or last) search, in the order they ran. */
  const trials = shallowRef<BatchTrial[]>([]);
  /** The request of the search shown (started here, re-attached or reopened): what its answer was found for, and what Apply sets. */
  const searched = shallowRef<ScriptBatchSearchRequest | null>(null);
  const buffer = scriptOutputBuffer();
  /** The form shows a request's command and numbers (a search re-attached or reopened). */
  function show(request: ScriptBatchSearchRequest): void {
    searched.value = request;
    form.value = { ...form.value, ...scriptFieldsOf(request.target, request.overrides) };
    numbers.value = searchNumbersOf(request);
  }
  const side = useScriptJob<ScriptBatchSearchRequestInput, BatchSearchResult>({
    kind: 'batchSize',
    handlers: {
      'batchSize.trial': (e) => (trials.value = [...trials.value, e.trial]),
      'script.output': (e: ScriptOutputEvent) => buffer.push(e),
    },
    request: () => scriptSearchFromForm(form.value, numbers.value),
    start: (job, request) => {
      searched.value = ScriptBatchSearchRequestSchema.parse(request);
      return job.start('batchSize.search', request);
    },
    attach: (job, info) => {
      // The greyed-out fields show what runs.
      const request = ScriptBatchSearchRequestSchema.safeParse(info.request);
      if (request.success) show(request.data);
      else searched.value = null;
      return job.attach({ ...info, method: 'batchSize.search', target: 'script' as const });
    },
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

  return { ...side, form, numbers, trials, searched, show, output: buffer.lines, status };
}

/**
 * The Batch size area: one search at a time on either target (the engine's here, what only a script's has in
 * `script`): its trials as they arrive, its answer, and Cancel. The search
 * followed is one started here, or one running when the window opened (a reload, another window),
 * re-attached through the jobs store.
 */
export const useBatchSizeStore = defineStore('batch-size', () => {
  const form = ref<BatchSearchForm>({
    model: 'cnn',
    data: 'fashion-mnist',
    device: 'cpu',
    memoryLimitMiB: 256,
    headroomPct: Math.round(DEFAULT_HEADROOM * 100),
    globalBatch: null,
    stepsPerTrial: 5,
  });
  /** Trials of the search in progress (or the last one), in the order they ran. */
  const trials = shallowRef<BatchTrial[]>([]);
  const result = shallowRef<BatchSearchResult | null>(null);
  /** True from Start (or attaching) to the end of the search. */
  const running = ref(false);
  /** The search's latest progress (preparing, or the trial running and its step) while it runs; null otherwise. */
  const progress = shallowRef<BatchSearchProgress | null>(null);
  /** When that progress arrived (Date.now()), so a view can count the seconds on between events. */
  const progressAt = ref(0);
  /** The request of the search shown (started here or re-attached): what its answer was found for. */
  const request = shallowRef<BatchSearchRequest | null>(null);
  /** The search shown was reopened from its run (not run here): the form shows its request, as for one re-attached. */
  const reopened = ref(false);

  const job = useJob({
    'batchSize.trial': (e) => (trials.value = [...trials.value, e.trial]),
    'batchSize.progress': (p) => {
      progress.value = p;
      progressAt.value = Date.now();
    },
  });
  /** The id of the running search (chosen before it starts), for Cancel and for matching its trial events. */
  const jobId = job.jobId;
  const error = job.error;

  /** Collects the trials of one search while `follow` lasts; its answer replaces them with the full list. */
  async function watch(searched: unknown, follow: () => Promise<BatchSearchResult | null>): Promise<void> {
    trials.value = [];
    result.value = null;
    error.value = null;
    progress.value = null;
    const parsed = BatchSearchRequestSchema.safeParse(searched);
    request.value = parsed.success ? parsed.data : null;
    reopened.value = false;
    running.value = true;
    try {
      result.value = await follow();
      if (result.value) trials.value = result.value.trials;
    } finally {
      running.value = false;
      progress.value = null;
    }
  }

  /**
   * Starts a search and collects its trials live; resolves when it ends (answer, error or cancel). `spec` is the
   * model's where it is no built-in (sized to the data, or read from its file); its family's recipe is used.
   */
  async function start(spec: ModelSpec | null = null): Promise<void> {
    if (running.value) return;
    const f = form.value;
    const cpu = f.device === 'cpu';
    const recipe = RECIPES[spec ? spec.family : (f.model as BuiltinModelName)];
    const asked = {
      spec: spec ?? BUILTIN_MODELS[f.model as BuiltinModelName],
      data: dataSourceOf(f.data),
      // The model's recipe, as `trainbench find-batch-size` and New run use it: its optimizer's state is part of the
      // memory measured, and its batch is the one the verdict scales the LR from.
      options: { ...recipe, device: f.device, memoryLimitBytes: cpu ? Math.round(f.memoryLimitMiB * 2 ** 20) : 0 },
      headroom: f.headroomPct / 100,
      stepsPerTrial: f.stepsPerTrial,
      ...(f.globalBatch ? { globalBatch: f.globalBatch } : {}),
    };
    await watch(asked, () => job.start('batchSize.search', asked));
  }

  /** Follows a search started elsewhere (before a reload, in another window) to its end. */
  async function attach(info: JobInfo): Promise<void> {
    if (running.value || info.method !== 'batchSize.search') return;
    await watch(info.request, () => job.attach({ ...info, method: 'batchSize.search' }));
  }
  useJobsStore().adopt('batchSize', 'engine', (info) => void attach(info));

  /** Why the last reopen of a search (openSearch) failed; null when it did not. */
  const openError = ref<string | null>(null);

  /**
   * Shows a finished search again from its run (the area's URL names it: a reload, a pasted link), on the target
   * it searched; not while a search runs. The engine's form shows the request via `request`, the script's fields via show().
   */
  async function openSearch(runId: string): Promise<void> {
    if (running.value || script.running.value) return;
    openError.value = null;
    try {
      const detail = await useApiClient().call('runs.get', { id: runId });
      if (detail.summary.kind !== 'batch-search') throw new Error(`run ${runId} is not a batch-size search`);
      const record = detail.record as { config?: unknown; result?: unknown } | null;
      const searchedNow = searchedRequestOf(record?.config);
      const answer = BatchSearchResultSchema.safeParse(record?.result);
      if (!searchedNow || !answer.success) throw new Error(`run ${runId} has no answer this page can show (${detail.summary.status})`);
      if (running.value || script.running.value) return;
      if (searchedNow.kind === 'script') {
        script.show(searchedNow.request);
        script.result.value = answer.data;
        script.trials.value = answer.data.trials;
      } else {
        request.value = searchedNow.request;
        result.value = answer.data;
        trials.value = answer.data.trials;
        error.value = null;
        reopened.value = true;
      }
      target.value = searchedNow.kind;
    } catch (err) {
      openError.value = errorText(err);
    }
  }

  /** Stops the running search at its current trial. */
  async function cancel(): Promise<void> {
    if (!running.value) return;
    await job.cancel();
  }

  /** Which target the area shows: the switch follows whichever side's search runs (here, re-attached, or elsewhere). */
  const target = ref<TargetKind>('engine');
  const script = scriptBatchSearch();
  followRunningTarget(target, { engine: running, script: script.running });

  return { target, form, trials, result, running, progress, progressAt, request, reopened, openSearch, openError, error, failure: job.failure, jobId, cancelling: job.cancelling, attached: job.attached, start, attach, cancel, script };
});
