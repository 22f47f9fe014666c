import { DIAGNOSIS_THRESHOLDS } from './diagnosis';
import type { Diagnosis } from '../../api/optimise';
import type { ScriptBound } from './knob';

/**
 * What bounds a script's step, from its baseline's phases: the data wait past the engine's threshold puts
 * the DataLoader's knobs first; otherwise the model's (mixed precision, compile, channels_last) go first.
 */
export function scriptBound(baseline: { phasesPercent: { data: number } }): ScriptBound {
  return baseline.phasesPercent.data > 100 * DIAGNOSIS_THRESHOLDS.dataWaitShare ? 'data' : 'compute';
}

/** The bound in words, for the wizard's output: what it rests on and what goes first. */
export function scriptBoundText(baseline: { phasesPercent: { data: number } }): string {
  const data = `data wait ${baseline.phasesPercent.data.toFixed(1)}% of the step`;
  return scriptBound(baseline) === 'data'
    ? `${data} (over ${100 * DIAGNOSIS_THRESHOLDS.dataWaitShare}%): the loader's settings are tried first`
    : `${data} (at most ${100 * DIAGNOSIS_THRESHOLDS.dataWaitShare}%): the compute sets the pace, so the model's settings (mixed precision, compile, channels_last) are tried first`;
}

/** The bound as the wizard's diagnosis (both targets' results carry one): from the data wait alone, no findings. */
export function scriptDiagnosis(baseline: { phasesPercent: { data: number } }): Diagnosis {
  return { bound: scriptBound(baseline), summary: scriptBoundText(baseline), findings: [] };
}
