import type { ConfounderPolicy, OptimisePreset, WizardObjective } from '@api/optimise';
import type { ScriptOptimiseRequestInput, ScriptOverrideKey } from '@api/script-target';
import { ScriptOptimiseRequestSchema } from '@api/script-target';

import type { ScriptForm } from '../stores/script-form';
import { emptyScriptForm, quoteArgv, scriptRequestFromForm } from '../stores/script-form';

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
const DEFAULTS = ScriptOptimiseRequestSchema.parse({ target: { kind: 'script', command: ['python3'], cwd: '/' } });

/** The Script target's fields with the wizard's measuring defaults (repeat, steps, warm-up) instead of a benchmark's. */
export function scriptOptimiseForm(): ScriptForm {
  return { ...emptyScriptForm(), repeat: DEFAULTS.repeat, steps: DEFAULTS.steps, warmupSteps: DEFAULTS.warmupSteps, timeoutSeconds: DEFAULTS.timeoutSeconds };
}

export function scriptWizardValues(): ScriptWizardValues {
  return { preset: DEFAULTS.preset, maxTrials: DEFAULTS.maxTrials, allowRecipeChanges: DEFAULTS.allowRecipeChanges, seed: DEFAULTS.seed, lossTolerance: DEFAULTS.lossTolerance, only: [], confounders: DEFAULTS.confounders, objective: DEFAULTS.objective };
}

/** The wizard's values a saved request ran with (to resume it, or to show what runs). */
export function wizardFromRequest(r: ScriptOptimiseRequestInput): ScriptWizardValues {
  return {
    preset: r.preset ?? DEFAULTS.preset,
    maxTrials: r.maxTrials ?? DEFAULTS.maxTrials,
    allowRecipeChanges: r.allowRecipeChanges ?? DEFAULTS.allowRecipeChanges,
    seed: r.seed ?? DEFAULTS.seed,
    lossTolerance: r.lossTolerance ?? DEFAULTS.lossTolerance,
    only: (r.only ?? []) as ScriptOverrideKey[],
    confounders: r.confounders ?? DEFAULTS.confounders,
    objective: r.objective ?? DEFAULTS.objective,
  };
}

/**
 * The wizard's request from the form, checked by the contract's own schema; throws with the field
 * named and the bad value, so nothing is sent (or confirmed) that the main process would refuse.
 * Without `jobId` the job that starts the wizard names it.
 */
export function scriptOptimiseRequest(form: ScriptForm, wizard: ScriptWizardValues, jobId?: string): ScriptOptimiseRequestInput {
  // Command, working directory, environment and overrides as the Benchmarks area reads them.
  const { target, overrides } = scriptRequestFromForm(form);
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
    ...(jobId ? { jobId } : {}),
  };
  const checked = ScriptOptimiseRequestSchema.safeParse(request);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    const field = issue.path.join('.') || 'request';
    const value = issue.path.reduce<unknown>((v, k) => (v as Record<string | number, unknown> | undefined)?.[k as string], request);
    throw new Error(`${field}: ${JSON.stringify(value)} is invalid: ${issue.message.charAt(0).toLowerCase()}${issue.message.slice(1)}`);
  }
  return request;
}

/** The form a saved request was made from (to resume it, the fields show what it runs with). */
export function formFromRequest(r: ScriptOptimiseRequestInput): ScriptForm {
  return {
    commandLine: quoteArgv(r.target.command),
    cwd: r.target.cwd,
    env: Object.entries(r.target.env ?? {}).map(([name, value]) => ({ name, value })),
    overrides: Object.entries(r.overrides ?? {}).map(([key, value]) => ({ key: key as ScriptOverrideKey, value: String(value) })),
    warmupSteps: r.warmupSteps ?? DEFAULTS.warmupSteps,
    steps: r.steps ?? DEFAULTS.steps,
    repeat: r.repeat ?? DEFAULTS.repeat,
    timeoutSeconds: r.timeoutSeconds ?? DEFAULTS.timeoutSeconds,
  };
}

/** Launches the wizard makes at most: the baseline, both sides of every trial, and the final check. */
export function launchesAtMost(repeat: number, maxTrials: number): number {
  return repeat + 2 * repeat * maxTrials + 2 * repeat;
}
