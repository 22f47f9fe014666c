import { sizedFamilyOf } from '@api/model-sizing';
import type { BuiltinModelName, ModelSpec } from '@api/model-spec';
import { BUILTIN_MODELS, isBuiltinModel, ModelSpecSchema } from '@api/model-spec';
import type { ConfounderPolicy, OptimisePreset, WizardObjective, OptimiseRequest, ReadFrom } from '@api/optimise';
import { OptimiseRequestSchema } from '@api/optimise';
import { issueWords } from '@api/format-issues';
import { settingWords } from '@api/run-config';
import { RECIPES } from '@api/recipes';
import type { ScriptOptimiseRequestInput, ScriptOverrideKey } from '@api/script-target';
import { ScriptOptimiseRequestSchema } from '@api/script-target';

import { dataChoiceOf, dataSourceOf } from '../composables/useTargetChoices';
import type { ModelChoices } from './model-choice';
import { modelChoiceOf } from './model-choice';
import type { ScriptForm } from './script-target-form';
import { collectorText, emptyScriptForm, scriptFieldsOf, scriptRequestFromForm } from './script-target-form';

/** What the Optimise form holds: the training configuration to start from, and how the wizard measures. */
export interface OptimiseFormValues {
  /** A built-in's name, 'sized:<family>' (sized to the chosen dataset) or a workspace spec file's path. */
  model: string;
  /** 'fashion-mnist', 'example-board' or 'dataset:<id>'. */
  data: string;
  readFrom: ReadFrom;
  device: string;
  precision: 'fp32' | 'bf16' | 'fp16';
  batchSize: number;
  accumulation: number;
  loaderWorkers: number;
  prefetch: number;
  /** CPU threads; 0: every core. */
  threads: number;
  seed: number;
  preset: OptimisePreset;
  /** Repetitions of the baseline and pairs of every trial. */
  repeat: number;
  steps: number;
  warmupSteps: number;
  /** The shortest measured window a repetition may have (s); 0: as `steps` says. */
  minWindowSeconds: number;
  maxTrials: number;
  allowRecipeChanges: boolean;
  /** The batch-size candidate from the batch-size search (where there is memory to search), else twice the batch. */
  batchSearch: boolean;
  /**
   * CPU only: the memory the batch-size search fills (the engine caps every measurement at it, as a GPU's
   * memory would), in MiB; null: none, and the CPU has no memory to search. Sent only with the search ticked.
   */
  memoryLimitMiB: number | null;
  /** Measure a pair again when the machine treated its sides differently, or only record the conditions. */
  confounders: ConfounderPolicy;
  /** Samples/s, or samples per joule of GPU energy. */
  objective: WizardObjective;
}
export type OptimiseField = keyof OptimiseFormValues;
export type OptimiseFormErrors = Partial<Record<OptimiseField | 'form', string>>;

/** The defaults of the contract (OptimiseRequestSchema and the training options), read from it, never restated. */
const REQUEST_DEFAULTS = OptimiseRequestSchema.parse({ target: { spec: BUILTIN_MODELS.mlp, data: { kind: 'fashion-mnist' } } });

/**
 * The form for a model: its recipe's settings (as a training run of it would use), the contract's
 * defaults for the rest; data and device stay as chosen.
 */
export function optimiseFormValues(model: string, keep: Pick<OptimiseFormValues, 'data' | 'device'>, family: BuiltinModelName | null = null): OptimiseFormValues {
  const r = RECIPES[isBuiltinModel(model) ? model : (sizedFamilyOf(model) ?? family ?? 'mlp')];
  const o = REQUEST_DEFAULTS.target.options;
  return {
    model,
    ...keep,
    readFrom: REQUEST_DEFAULTS.target.readFrom,
    precision: o.precision,
    batchSize: r.batchSize ?? o.batchSize,
    accumulation: r.accumulation ?? o.accumulation,
    loaderWorkers: r.loaderWorkers ?? o.loaderWorkers,
    prefetch: r.prefetch ?? o.prefetch,
    threads: r.threads ?? o.threads,
    seed: r.seed ?? o.seed,
    preset: REQUEST_DEFAULTS.preset,
    repeat: REQUEST_DEFAULTS.repeat,
    steps: REQUEST_DEFAULTS.steps,
    warmupSteps: REQUEST_DEFAULTS.warmupSteps,
    minWindowSeconds: REQUEST_DEFAULTS.minWindowSeconds,
    maxTrials: REQUEST_DEFAULTS.maxTrials,
    allowRecipeChanges: REQUEST_DEFAULTS.allowRecipeChanges,
    batchSearch: batchSearchDefault(keep.device),
    memoryLimitMiB: null,
    confounders: REQUEST_DEFAULTS.confounders,
    objective: REQUEST_DEFAULTS.objective,
  };
}

/**
 * The form's values a running wizard's request was made with (one re-attached after a reload or from another
 * window), so the greyed-out form shows what runs. The model and data are the form's choices that give the
 * request's again; where the form has none (a spec or files given to the CLI) `keep`'s stay.
 */
export function optimiseFormOf(r: OptimiseRequest, choices: ModelChoices, keep: Pick<OptimiseFormValues, 'model' | 'data'>): OptimiseFormValues {
  const data = dataChoiceOf(r.target.data) ?? keep.data;
  const o = r.target.options;
  return {
    model: modelChoiceOf(r.target.spec, data, choices.datasets, choices.models) ?? keep.model,
    data,
    readFrom: r.target.readFrom,
    device: o.device,
    precision: o.precision,
    batchSize: o.batchSize,
    accumulation: o.accumulation,
    loaderWorkers: o.loaderWorkers,
    prefetch: o.prefetch,
    threads: o.threads,
    seed: o.seed,
    preset: r.preset,
    repeat: r.repeat,
    steps: r.steps,
    warmupSteps: r.warmupSteps,
    minWindowSeconds: r.minWindowSeconds,
    maxTrials: r.maxTrials,
    allowRecipeChanges: r.allowRecipeChanges,
    batchSearch: r.batchSearch,
    memoryLimitMiB: o.memoryLimitBytes > 0 ? o.memoryLimitBytes / 2 ** 20 : null,
    confounders: r.confounders,
    objective: r.objective,
  };
}

/** The schema path of each form field, to name a contract error next to its field. */
const FIELD_OF_PATH: Partial<Record<string, OptimiseField>> = {
  'target.data.train': 'data',
  'target.readFrom': 'readFrom',
  'target.options.device': 'device',
  'target.options.precision': 'precision',
  'target.options.batchSize': 'batchSize',
  'target.options.accumulation': 'accumulation',
  'target.options.loaderWorkers': 'loaderWorkers',
  'target.options.prefetch': 'prefetch',
  'target.options.threads': 'threads',
  'target.options.seed': 'seed',
  'target.options.memoryLimitBytes': 'memoryLimitMiB',
  preset: 'preset',
  repeat: 'repeat',
  steps: 'steps',
  warmupSteps: 'warmupSteps',
  minWindowSeconds: 'minWindowSeconds',
  maxTrials: 'maxTrials',
  allowRecipeChanges: 'allowRecipeChanges',
  batchSearch: 'batchSearch',
  confounders: 'confounders',
  objective: 'objective',
};

/**
 * The request's memory limit: the form's, on the CPU with the batch-size search ticked (the only place
 * the field shows); 0 otherwise (a GPU's own memory is its limit). A value that is not a whole number of
 * bytes is sent as typed, for the contract to refuse next to the field.
 */
export function memoryLimitBytesOf(v: Pick<OptimiseFormValues, 'device' | 'batchSearch' | 'memoryLimitMiB'>): number {
  if (v.device !== 'cpu' || !v.batchSearch || v.memoryLimitMiB === null || (v.memoryLimitMiB as unknown) === '') return 0;
  return typeof v.memoryLimitMiB === 'number' && Number.isFinite(v.memoryLimitMiB) ? Math.round(v.memoryLimitMiB * 2 ** 20) : (v.memoryLimitMiB as never);
}

/**
 * The batch-size search's box as a form opens on this device: ticked where there is device memory to search,
 * unticked on the CPU, where it needs a memory limit first and a ticked box would open with its warning
 * (issue 41 item 7); the CPU then takes twice the batch as its candidate, as the service does without a limit.
 */
export function batchSearchDefault(device: string): boolean {
  return REQUEST_DEFAULTS.batchSearch && device !== 'cpu';
}

/**
 * The box after the device changes: it follows the new device's default while it still holds the old one's and no
 * limit was typed, and keeps a person's own choice otherwise.
 */
export function batchSearchAfterDeviceChange(v: Pick<OptimiseFormValues, 'batchSearch' | 'memoryLimitMiB'>, from: string, to: string): boolean {
  const untouched = v.batchSearch === batchSearchDefault(from) && (v.memoryLimitMiB === null || (v.memoryLimitMiB as unknown) === '');
  return untouched ? batchSearchDefault(to) : v.batchSearch;
}

/** Why the batch-size search cannot run with these values (the CPU without a memory limit), or null. */
export function batchSearchBlocked(v: Pick<OptimiseFormValues, 'device' | 'batchSearch' | 'memoryLimitMiB'>): string | null {
  if (!v.batchSearch || v.device !== 'cpu' || memoryLimitBytesOf(v) > 0) return null;
  return 'the batch-size search cannot run on the CPU without a memory limit (there is no device memory to fill): give one, or the batch-size candidate is twice the batch';
}

export type OptimiseRequestOrErrors = { request: OptimiseRequest; errors: null } | { request: null; errors: OptimiseFormErrors };

/**
 * Checks the values with the contract's own OptimiseRequestSchema (the one `trainbench optimise` and
 * the service use), so the form refuses exactly what optimise.start would, naming the field. As the
 * CLI does, only the recipe's batch size is taken over; the optimizer is the family's own. Without
 * `jobId` the job that starts the wizard names it.
 */
export function optimiseRequest(v: OptimiseFormValues, jobId?: string, spec: ModelSpec | null = null): OptimiseRequestOrErrors {
  // A model other than a built-in comes with its spec (sized to the data, or read from its file).
  if (!spec && !isBuiltinModel(v.model)) return { request: null, errors: { model: `${v.model} has not been read yet, or it is not a usable model spec` } };
  const parsed = OptimiseRequestSchema.safeParse({
    target: {
      spec: spec ?? ModelSpecSchema.parse(BUILTIN_MODELS[v.model as BuiltinModelName]),
      data: dataSourceOf(v.data),
      readFrom: v.readFrom,
      options: {
        device: v.device,
        precision: v.precision,
        batchSize: v.batchSize,
        accumulation: v.accumulation,
        loaderWorkers: v.loaderWorkers,
        prefetch: v.prefetch,
        threads: v.threads,
        seed: v.seed,
        memoryLimitBytes: memoryLimitBytesOf(v),
      },
    },
    preset: v.preset,
    repeat: v.repeat,
    steps: v.steps,
    warmupSteps: v.warmupSteps,
    minWindowSeconds: v.minWindowSeconds,
    maxTrials: v.maxTrials,
    allowRecipeChanges: v.allowRecipeChanges,
    batchSearch: v.batchSearch,
    confounders: v.confounders,
    objective: v.objective,
    jobId,
  });
  if (parsed.success) return { request: parsed.data, errors: null };
  const errors: OptimiseFormErrors = {};
  for (const issue of parsed.error.issues) {
    const at = issue.path.join('.');
    const field: OptimiseField | 'form' = FIELD_OF_PATH[at] ?? 'form';
    // The value as typed beside the rule it breaks, in words: "must be at least 2 (1 given)".
    const message = issueWords(issue);
    errors[field] ??= field === 'form' ? `${at}: ${message}` : `${message} (${JSON.stringify(v[field])} given)`;
  }
  return { request: null, errors };
}

// The wizard on a script target: the script target's fields (ScriptTargetFields) with how the wizard works on it.

/** How the wizard works on a script, beside the target's fields (ScriptTargetFields). */
export interface ScriptWizardValues {
  preset: OptimisePreset;
  maxTrials: number;
  allowRecipeChanges: boolean;
  /** Seeds every launch alike, so their losses compare. */
  seed: number;
  /** Largest relative change of the mean loss a kept change may make. */
  lossTolerance: number;
  /** The overrides the wizard may try; empty: every one. */
  only: ScriptOverrideKey[];
  /** Measure a pair again when the machine treated its sides differently, or only record the conditions. */
  confounders: ConfounderPolicy;
  /** Samples/s, or samples per joule of GPU energy. */
  objective: WizardObjective;
}

/** The contract's defaults for a script wizard, read from it, never restated. */
const SCRIPT_DEFAULTS = ScriptOptimiseRequestSchema.parse({ target: { kind: 'script', command: ['python3'], cwd: '/' } });

/** The Script target's fields with the wizard's measuring defaults (repeat, steps, warm-up) instead of a benchmark's. */
export function scriptOptimiseForm(): ScriptForm {
  return { ...emptyScriptForm(), repeat: SCRIPT_DEFAULTS.repeat, steps: SCRIPT_DEFAULTS.steps, warmupSteps: SCRIPT_DEFAULTS.warmupSteps, timeoutSeconds: SCRIPT_DEFAULTS.timeoutSeconds };
}

export function scriptWizardValues(): ScriptWizardValues {
  return { preset: SCRIPT_DEFAULTS.preset, maxTrials: SCRIPT_DEFAULTS.maxTrials, allowRecipeChanges: SCRIPT_DEFAULTS.allowRecipeChanges, seed: SCRIPT_DEFAULTS.seed, lossTolerance: SCRIPT_DEFAULTS.lossTolerance, only: [], confounders: SCRIPT_DEFAULTS.confounders, objective: SCRIPT_DEFAULTS.objective };
}

/** The wizard's values a saved request ran with (to resume it, or to show what runs). */
export function wizardFromRequest(r: ScriptOptimiseRequestInput): ScriptWizardValues {
  return {
    preset: r.preset ?? SCRIPT_DEFAULTS.preset,
    maxTrials: r.maxTrials ?? SCRIPT_DEFAULTS.maxTrials,
    allowRecipeChanges: r.allowRecipeChanges ?? SCRIPT_DEFAULTS.allowRecipeChanges,
    seed: r.seed ?? SCRIPT_DEFAULTS.seed,
    lossTolerance: r.lossTolerance ?? SCRIPT_DEFAULTS.lossTolerance,
    only: (r.only ?? []) as ScriptOverrideKey[],
    confounders: r.confounders ?? SCRIPT_DEFAULTS.confounders,
    objective: r.objective ?? SCRIPT_DEFAULTS.objective,
  };
}

/**
 * The wizard's request from the form, checked by the contract's own schema; throws with the field
 * named and the bad value, so nothing is sent (or confirmed) that the main process would refuse.
 * Without `jobId` the job that starts the wizard names it.
 */
export function scriptOptimiseRequest(form: ScriptForm, wizard: ScriptWizardValues, jobId?: string): ScriptOptimiseRequestInput {
  // Command, working directory, environment and overrides as the Benchmarks area reads them.
  const { target, overrides, collector } = scriptRequestFromForm(form);
  if (!form.steps) throw new Error('measured steps: the wizard stops every launch after this many steps; type a number (e.g. 20)');
  const request: ScriptOptimiseRequestInput = {
    target,
    overrides,
    preset: wizard.preset,
    repeat: form.repeat,
    steps: form.steps,
    warmupSteps: form.warmupSteps,
    maxTrials: wizard.maxTrials,
    allowRecipeChanges: wizard.allowRecipeChanges,
    seed: wizard.seed,
    lossTolerance: wizard.lossTolerance,
    confounders: wizard.confounders,
    objective: wizard.objective,
    ...(wizard.only.length ? { only: wizard.only } : {}),
    timeoutSeconds: form.timeoutSeconds,
    ...(collector ? { collector } : {}),
    ...(jobId ? { jobId } : {}),
  };
  const checked = ScriptOptimiseRequestSchema.safeParse(request);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    const field = issue.path.join('.') || 'request';
    const value = issue.path.reduce<unknown>((v, k) => (v as Record<string | number, unknown> | undefined)?.[k as string], request);
    throw new Error(`${settingWords(field)}: ${issueWords(issue)} (${JSON.stringify(value)} given)`);
  }
  return request;
}

/** The form a saved request was made from (to resume it, the fields show what it runs with). */
export function formFromRequest(r: ScriptOptimiseRequestInput): ScriptForm {
  return {
    ...scriptFieldsOf(r.target, r.overrides),
    warmupSteps: r.warmupSteps ?? SCRIPT_DEFAULTS.warmupSteps,
    steps: r.steps ?? SCRIPT_DEFAULTS.steps,
    repeat: r.repeat ?? SCRIPT_DEFAULTS.repeat,
    timeoutSeconds: r.timeoutSeconds ?? SCRIPT_DEFAULTS.timeoutSeconds,
    ...(r.collector ? { collector: collectorText(r.collector) } : {}),
  };
}

/** Launches the wizard makes at most: the baseline, both sides of every trial, and the final check. */
export function launchesAtMost(repeat: number, maxTrials: number): number {
  return repeat + 2 * repeat * maxTrials + 2 * repeat;
}
