import type { OptimiseProgress } from '../../api/optimise';

export interface EtaInputs {
  /** Seconds each finished launch (one repetition of one side) took so far. */
  launchSeconds: readonly number[];
  phase: OptimiseProgress['phase'];
  /** Repetitions done in the current phase, and how many each side runs (the request's repeat). */
  repetition: number;
  repeat: number;
  /** Trials still to run after the one in flight, as far as the wizard can tell now (an upper bound before the diagnosis). */
  trialsLeft: number;
  /** Whether the final A/B/A/B is measured already. */
  finalDone: boolean;
}

/**
 * Seconds left of an optimisation wizard, either target: the launches still to run (the rest of this
 * phase, 2 x repeat per trial left, 2 x repeat for the final) at the mean time a launch took so far;
 * null before the first launch ended.
 */
export function wizardEta(e: EtaInputs): number | null {
  if (e.launchSeconds.length === 0) return null;
  const perLaunch = e.launchSeconds.reduce((a, b) => a + b, 0) / e.launchSeconds.length;
  const k = e.repeat;
  const inPhase = e.phase === 'baseline' ? k - e.repetition : e.phase === 'trial' || e.phase === 'final' ? 2 * (k - e.repetition) : 0;
  const finalLaunches = e.finalDone || e.phase === 'final' || e.phase === 'done' ? 0 : 2 * k;
  return perLaunch * (Math.max(0, inPhase) + 2 * k * Math.max(0, e.trialsLeft) + finalLaunches);
}
