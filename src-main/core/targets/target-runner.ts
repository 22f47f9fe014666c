import type { OptimiseChange, OptimisePreset, SkippedChange, TrialCompile } from '../../api/optimise';
import type { Conditions } from '../../api/telemetry';
import type { KnobTarget } from '../knobs/knob';
import type { FinalWords } from '../optimise/final-verdict';

/** What one repetition of a target tells the wizard: its throughput, and its loss where the target can see it. */
export interface Repetition {
  samplesPerSec: number;
  /** Mean loss over the measured steps (Infinity: it diverged); null where the target cannot measure it. */
  loss: number | null;
  /** What else the machine did during it (core/telemetry/conditions.ts); absent where it was not watched. */
  conditions?: Conditions | null;
  /** Samples per joule of GPU energy over it (the energy objective), or null with why. */
  samplesPerJoule?: number | null;
  energyMissing?: string | null;
}

/** The knobs' next steps from a configuration: the changes to try in order, and the ones that do not apply here. */
export interface Candidates {
  changes: OptimiseChange[];
  skipped: SkippedChange[];
}

/**
 * What the one optimisation wizard (core/optimise/wizard-loop.ts) needs from a target: our engine's
 * configuration (core/targets/engine-runner.ts) or the user's command through the probe
 * (core/targets/script-runner.ts). `C` is the target's configuration, `R` what one repetition measured.
 */
export interface TargetRunner<C, R extends Repetition = Repetition> {
  readonly kind: KnobTarget;
  /** What a person calls one repetition of this target ("launch" for a script), for messages. */
  readonly unit: string;
  /** One repetition of `config`, fresh (a new trainer, a new launch): the unit every A/B pair is made of. */
  measure(config: C): Promise<R>;
  /** The configuration with one change applied. */
  apply(config: C, change: OptimiseChange): C;
  /** Every offered knob's next step from `best`, less those in `exhausted`; null before the target knows enough (its baseline). */
  candidates(best: C, exhausted: readonly string[]): Candidates | null;
  /** Why this target will not try a change the preset allows, or null. */
  refuses(change: OptimiseChange, preset: OptimisePreset): string | null;
  /** What a trial's repetitions tell beyond speed and loss (a compile trial's compile time and pay-off), added to the trial. */
  trialExtras?(change: OptimiseChange, best: readonly R[], candidate: readonly R[]): { why: string; compile?: TrialCompile } | null;
  /** Why the loss of this target's repetitions cannot be compared (a change kept is then kept without a loss check), or null. */
  lossUnchecked?(): string | null;
  /** How the final card speaks of this target, given the changes kept. */
  words(kept: readonly string[]): FinalWords;
}
