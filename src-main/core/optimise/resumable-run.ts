import type { OptimiseChange, OptimiseConfig, OptimiseRequest, SkippedChange, WizardState } from '../../api/optimise';
import type { KnobContext } from './knobs';
import { candidateChanges } from './knobs';
import { PRESETS } from './presets';

/** A fresh wizard at its starting point: the target's own settings are the current best. */
export function initialState(optimiseId: string, request: OptimiseRequest): WizardState {
  return {
    schemaVersion: 1,
    optimiseId,
    request,
    status: 'running',
    runIds: [],
    baseline: null,
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

/** The words a person gets when the wizard stops early, with the command that continues it. */
export function cancelledMessage(state: WizardState): string {
  const n = state.trials.length;
  return `optimisation cancelled after ${n} trial${n === 1 ? '' : 's'}; resume it with trainbench optimise --resume ${state.optimiseId}`;
}

function remember(skipped: SkippedChange[], entry: SkippedChange): void {
  if (!skipped.some((s) => s.change.knob === entry.change.knob && s.why === entry.why)) skipped.push(entry);
}

/**
 * The next change of the coordinate ascent from a saved state: the first knob,
 * in the diagnosis's order, that the preset allows and that has not been tried
 * since the last kept change; null when every knob is done or the trial budget
 * is spent. Changes the preset refuses or that do not apply here are added to
 * `state.skipped` with the reason.
 */
export function nextChange(state: WizardState, ctx: KnobContext): OptimiseChange | null {
  if (!state.diagnosis) throw new RangeError(`nextChange: optimisation ${state.optimiseId} has no diagnosis yet`);
  const rule = PRESETS[state.request.preset];
  const found = candidateChanges(state.best, state.diagnosis, ctx, state.exhausted);
  for (const s of found.skipped) remember(state.skipped, { change: s.change, why: rule.refuses(s.change) ?? s.why });
  let next: OptimiseChange | null = null;
  for (const c of found.changes) {
    const refused = rule.refuses(c);
    if (refused) remember(state.skipped, { change: c, why: refused });
    else next ??= c;
  }
  return state.trials.length >= state.request.maxTrials ? null : next;
}

/** How many trials are likely left: the knobs still to try, within the trial budget (for the ETA). */
export function trialsLeft(state: WizardState, ctx: KnobContext | null): number {
  if (!state.diagnosis || !ctx) return Math.max(0, state.request.maxTrials - state.trials.length);
  const rule = PRESETS[state.request.preset];
  const open = candidateChanges(state.best, state.diagnosis, ctx, state.exhausted).changes.filter((c) => rule.refuses(c) === null).length;
  return Math.max(0, Math.min(open, state.request.maxTrials - state.trials.length));
}

/** Two configurations are the same measurement when every setting matches. */
export function configKey(c: OptimiseConfig): string {
  return JSON.stringify({ readFrom: c.readFrom, options: c.options });
}
