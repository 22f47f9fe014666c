import type { OptimiseConfig, OptimiseRequest, WizardState } from '../../../api/optimise';

/** A fresh wizard at its starting point: the target's own settings are the current best. */
export function initialState(jobId: string, request: OptimiseRequest): WizardState {
  return {
    schemaVersion: 2,
    jobId,
    request,
    status: 'running',
    runIds: [],
    baseline: null,
    stepsWidened: null,
    diagnosis: null,
    limits: null,
    best: { options: request.target.options, readFrom: request.target.readFrom },
    trials: [],
    skipped: [],
    batchSearch: null,
    exhausted: [],
    final: null,
    message: null,
    updatedAt: new Date().toISOString(),
    seconds: 0,
  };
}

/** The words a person gets when the wizard stops early, with both ways to continue it (the app's Resume and the CLI's). */
export function cancelledMessage(state: WizardState): string {
  const n = state.trials.length;
  return `optimisation cancelled after ${n} trial${n === 1 ? '' : 's'}; it can be resumed (Resume in the Optimise area, or trainbench optimise --resume ${state.jobId})`;
}

/** Two configurations are the same measurement when every setting matches. */
export function configKey(c: OptimiseConfig): string {
  return JSON.stringify({ readFrom: c.readFrom, options: c.options });
}
