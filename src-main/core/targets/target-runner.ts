import type { BatchSearchRequest, BatchSearchResult, BatchTrial } from '../../api/batch-size';
import type { BenchmarkProgress, TrainingBenchmarkRequest } from '../../api/benchmark';
import type { EngineBenchmarkResult, ScriptBenchmarkResult } from '../../api/benchmark-result';
import type {
  ConditionsRow,
  ConfounderPolicy,
  OptimiseChange,
  OptimisePreset,
  OptimiseProgress,
  OptimiseRequest,
  OptimiseTrial,
  SkippedChange,
  TrialCompile,
  WizardObjective,
  WizardState,
} from '../../api/optimise';
import type { Interval } from '../stats/medians';
import type { RunComputeDevice, RunRecordJson } from '../../api/run-record';
import type {
  ScriptBatchSearchRequest,
  ScriptBenchmarkRequest,
  ScriptOptimiseRequest,
  ScriptTrainRequest,
} from '../../api/script-target';
import type { OptimiseResult, ScriptOptimiseRecord } from '../../api/optimise-result';
import type { TargetKind } from '../../api/target';
import type { Conditions } from '../../api/telemetry';
import type { TrainEvent, TrainRequest } from '../../api/training';
import type { ScriptProgressEvent, TrainRunResult } from '../../api/train-result';
import type { RunningJob } from '../jobs/running-jobs';
import type { RunRecord } from '../workspace/run-store';

/** A request of each capability, either target: its `target` (or its absence, for the engine) says which runner takes it. */
export type TrainRunRequest = TrainRequest | ScriptTrainRequest;
export type BenchmarkRequest = TrainingBenchmarkRequest | ScriptBenchmarkRequest;
export type BatchRequest = BatchSearchRequest | ScriptBatchSearchRequest;
export type WizardRequest = OptimiseRequest | ScriptOptimiseRequest;

/** A line the user's command wrote, with the repetition (launch) that wrote it; never called for the engine. */
export type OnOutput = (stream: 'stdout' | 'stderr', line: string, repetition: number) => void;

/** What a caller (the router, the CLI) may ask to hear while a capability runs, either target. */
export interface CapabilityOptions {
  /** Called with the job's id before any work, e.g. to offer a cancel (the CLI's Ctrl-C). */
  onStart?: (jobId: string) => void;
  onOutput?: OnOutput;
  /** A script's job across machines: the code its other nodes follow every launch with (`trainbench join`), said once. */
  onJoin?: (code: string) => void;
  /** The CLI may read data from anywhere the user points it; requests from the UI stay inside the workspace. */
  allowPathsOutsideWorkspace?: boolean;
}

export interface TrainOptions extends CapabilityOptions {
  /** The engine's step and epoch events. */
  onEvent?: (event: TrainEvent) => void;
  /** A script's progress points. */
  onProgress?: (progress: ScriptProgressEvent) => void;
}

/** Progress as a benchmark's loop reports it; the service adds its job id, target and totals. */
export type RepetitionProgress = Omit<BenchmarkProgress, 'jobId' | 'target' | 'repetitions' | 'totalSteps' | 'warmupSteps' | 'steps'>;

/** One benchmark on one target, ready to measure: what its run records and how one repetition runs. */
export interface BenchmarkPlan<R = unknown> {
  /** "benchmark", "script benchmark": how messages name it. */
  what: string;
  /** "repetition", "launch": what a person calls one of its repetitions. */
  unit: string;
  /** run.json's config (the request, and what the target resolved: the cached data). */
  config: RunRecordJson['config'];
  computeDevice?: RunComputeDevice;
  /** One fresh repetition (a new engine trainer, a new launch of the command), recorded into the run. */
  repetition(i: number, run: RunRecord, progress: (p: RepetitionProgress) => void): Promise<R>;
  /** The repetition as the run's events.jsonl records it, and its samples/s for the progress. */
  recorded(rep: R): { event: Record<string, unknown>; samplesPerSec: number };
  summarize(run: RunRecord, reps: R[]): Promise<EngineBenchmarkResult | ScriptBenchmarkResult> | EngineBenchmarkResult | ScriptBenchmarkResult;
  /** Ends what the plan held for its repetitions (telemetry samplers). */
  release(): void;
}

/** What the batch-size search needs of a finished trial (planner.ts's PlannedPoint). */
export type BatchPoint = BatchTrial;

/** One batch-size search on one target: where it starts, how a trial runs, and the answer from the trials. */
export interface BatchPlan {
  config: RunRecordJson['config'];
  computeDevice?: RunComputeDevice;
  /** The first batch tried (the engine's memory model; a script's start batch), the largest allowed. */
  seed: number;
  maxBatch: number;
  /** The user's batch, whose doublings below the seed are measured too (the engine's; none for a script). */
  ladderFrom?: number;
  /** One trial at batch `b`: a data point (trained, out of memory, killed) or an error that ends the search. */
  trial(b: number, run: RunRecord, index: number): Promise<BatchPoint>;
  /** The result from every trial and the search's picks; saved as the run's result. */
  /** `cancelled`: the search stopped at a cancel; the answer is from its finished trials, and nothing more is trained for it. */
  result(run: RunRecord, search: { trials: BatchPoint[]; largestFitting: number | null; recommended: number | null; cancelled: boolean }, seconds: number): Promise<BatchSearchResult>;
  /** Ends what the plan held (a log). */
  close(): Promise<void>;
}

export interface WizardOptions extends CapabilityOptions {
  onProgress?: (progress: OptimiseProgress) => void;
  /**
   * Resuming a script optimisation launches the command its run file names. A workspace file is data (it may be
   * copied from another rig, or tampered with), so only the user's own word for that very command may do that:
   * the CLI's --resume sets this to its --yes FINGERPRINT (false without --yes: the command is shown, escaped,
   * with its fingerprint, and nothing runs). Absent (a request through the router): refused; it goes on with a
   * script wizard by optimise.start with its target and resumeFrom.
   */
  commandConsent?: string | boolean;
}

/**
 * What every capability (the training run, the benchmark, the batch-size search, the optimisation wizard) needs of
 * a target: our engine's configuration (engine-runner.ts) or the user's own command through the probe
 * (script-runner.ts). runner-for.ts picks one from a request; nothing else reads the target's kind.
 */
export interface TargetRunner {
  readonly kind: TargetKind;
  /** How a person names each capability's job on this target, for messages ("script benchmark"). */
  readonly jobNames: Readonly<Record<'train' | 'benchmark' | 'batchSearch' | 'optimise', string>>;
  /** A whole training run, recorded as a run of kind train whose id is the job's. */
  train(request: TrainRunRequest, job: RunningJob, options: TrainOptions): Promise<TrainRunResult>;
  /** A benchmark made ready: data prepared (the engine) or the command checked (a script), nothing measured yet. */
  benchmark(request: BenchmarkRequest, job: RunningJob, progress: (p: RepetitionProgress) => void, options: CapabilityOptions): Promise<BenchmarkPlan>;
  /** A batch-size search made ready: the memory to fill and the seed (the engine), or the start batch (a script). */
  batchSearch(request: BatchRequest, job: RunningJob, options: CapabilityOptions & { onTrial?: (trial: BatchPoint) => void }): Promise<BatchPlan>;
  /** The optimisation wizard on this target from a new request: its run recorded, its state saved, nothing measured yet. */
  optimise(request: WizardRequest, job: RunningJob, options: WizardOptions): Promise<WizardSession>;
  /**
   * A stopped wizard of this target going on from its saved state under its job (a finished one answers with its
   * result): the same wizard (the engine's state is kept by its id), or a new run from the one named (a script's).
   */
  resume(jobId: string, job: RunningJob, options: WizardOptions): Promise<WizardSession | OptimiseResult>;
  /** What the wizard of this id measured so far; undefined when no wizard of this target has the id. */
  savedWizard(jobId: string): Promise<SavedWizard | undefined>;
}

/** How the final card speaks of a target, given the changes kept (optimise/final-verdict.ts words the verdict). */
export interface FinalWords {
  /** "The final configuration", "The script with amp.dtype=bf16". */
  subject: string;
  /** What to do when nothing was kept. */
  unchanged: string;
  /** How to allow recipe changes, for a proposal. */
  allowRecipe: string;
}

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
 * What the one optimisation wizard loop (core/optimise/wizard-loop.ts) needs from a target's repetitions: our engine's
 * configuration (targets/engine/wizard-repetitions.ts) or the user's command through the probe
 * (targets/script/wizard-launches.ts). `C` is the target's configuration, `R` what one repetition measured.
 */
export interface WizardTarget<C, R extends Repetition = Repetition> {
  readonly kind: 'engine' | 'script';
  /** What a person calls one repetition of this target ("launch" for a script), for messages. */
  readonly unit: string;
  /**
   * One repetition of `config`, fresh (a new trainer, a new launch): the unit every A/B pair is made of. On random
   * stream `stream` where it is not 0 (every seed the repetition sets moved by it), for a target with randomStreams.
   */
  measure(config: C, stream?: number): Promise<R>;
  /**
   * Why `change` alters which random streams the training draws from (DataLoader workers: the same seed then gives
   * other augmentations), or null: it does not. Such a change's loss is judged across streams (ADR 0042).
   */
  randomStreams?(change: OptimiseChange): string | null;
  /** The configuration with one change applied. */
  apply(config: C, change: OptimiseChange): C;
  /** Every offered knob's next step from `best`, less those in `exhausted`; null before the target knows enough (its baseline). */
  candidates(best: C, exhausted: readonly string[]): Candidates | null;
  /** Why this target will not try a change the preset allows, or null. */
  refuses(change: OptimiseChange, preset: OptimisePreset): string | null;
  /** What a trial's repetitions tell beyond speed and loss (a compile trial's compile time and pay-off), added to the trial. */
  trialExtras?(change: OptimiseChange, best: readonly R[], candidate: readonly R[], warmUp: R | null): { why: string; compile?: TrialCompile } | null;
  /**
   * A repetition of the candidate before the trial's pairs, not measured, where its first one would not be like the
   * rest (a compile whose cache is cold): its cost is the trial's to report, never in a pair. Null (at once): none needed.
   */
  warmUp?(candidate: C, change: OptimiseChange): Promise<R> | null;
  /** Why the loss of this target's repetitions cannot be compared (a change kept is then kept without a loss check), or null. */
  lossUnchecked?(): string | null;
  /** How the final card speaks of this target, given the changes kept. */
  words(kept: readonly string[]): FinalWords;
}

/** A wizard's saved state, either target: an engine wizard's (optimise/<id>/state.json), or a script wizard's record (runs/<id>/state.json). */
export type SavedWizard = WizardState | ScriptOptimiseRecord | null;

/** What the user asked of the wizard, either target. */
export interface WizardRules {
  preset: OptimisePreset;
  /** Repetitions of each side of every A/B comparison (and of the baseline). */
  repeat: number;
  maxTrials: number;
  allowRecipeChanges: boolean;
  /** Relative loss change a pipeline change may cause; unused where the runner measures no loss. */
  lossTolerance: number;
  /** Re-measure a pair whose sides saw different conditions, or only record them (ADR 0028). */
  confounders: ConfounderPolicy;
  /** What the comparisons compare: samples/s, or samples per joule of GPU energy. */
  objective: WizardObjective;
}

/** Where the coordinate ascent stands: saved after every trial, so a resumed wizard goes on from here. */
export interface SearchState<C> {
  best: C;
  trials: OptimiseTrial[];
  /** Knobs tried since the last kept change: the ascent does not try them again until something is kept. */
  exhausted: string[];
  skipped: SkippedChange[];
}

/** The wizard's progress without the fields only its owner knows (its id, its run, its clock). */
export type LoopProgress = Pick<OptimiseProgress, 'phase' | 'trial' | 'repetition' | 'repetitions' | 'label' | 'finishedTrial' | 'etaSeconds'>;

/** What the final comparison says, the target's configuration aside. */
export interface FinalComparison<C> {
  config: C;
  changes: string[];
  speedup: Interval;
  samplesPerSec: Interval;
  /** The baseline's side of the final comparison. */
  baselineSamplesPerSec?: Interval;
  verdict: string;
  proposals: string[];
  conditions?: ConditionsRow[];
}

/** Progress outside the loop's own phases (preparing, limits, the batch search, done), with the loop's ETA. */
export type SayPhase = (phase: OptimiseProgress['phase'], label?: string | null) => void;

/** What a target's baseline repetitions are judged by: the objective's noise, and samples/J where every one had it. */
export interface BaselineMeasures<R> {
  noise(reps: readonly R[]): number;
  perJoule(reps: readonly R[]): number[] | null;
}

/**
 * One wizard on one target as the one driver (core/optimise/wizard-driver.ts) runs it: the target's repetitions
 * and rules, where the ascent stands, and the target's own steps around the loop (its baseline's bookkeeping, what
 * its knobs learn from the baseline, how it saves, what its result holds, how its run ends).
 */
export interface WizardSession<C = unknown, R extends Repetition = Repetition> {
  target: WizardTarget<C, R>;
  rules: WizardRules;
  /** Where the ascent stands (a resumed wizard's trials included): saved after every trial. */
  state: SearchState<C>;
  /** Whether the user cancelled. */
  cancelled(): boolean;
  /** The last cancellation point, before the result is recorded (closedToCancel): true when a cancel came; none is taken after. */
  closeToCancel(): boolean;
  progress(p: LoopProgress): void;
  /** Before anything is measured: the target's data or command made ready. */
  prepare(say: SayPhase): Promise<void>;
  /** The baseline already known (a resumed wizard's), or null to measure it. */
  baseline(): { config: C; samplesPerSec: Interval; noiseFloor: number } | null;
  /** The starting configuration a new baseline measures. */
  start(): C;
  /** Takes the baseline's repetitions; true asks for them again (the window was too short, the steps were raised). */
  takeBaseline(reps: R[], measures: BaselineMeasures<R>): Promise<boolean>;
  /** After the baseline: what the knobs need from it (diagnosis, limits, a batch search, a baseline event), saved. */
  afterBaseline(say: SayPhase): Promise<void>;
  /** After each trial: recorded and saved, so a killed wizard loses only the trial in flight. */
  afterTrial(trial: OptimiseTrial): Promise<void>;
  /** The final comparison measured before (a resumed wizard stopped after it), or null. */
  finalDone(): boolean;
  /** The wizard's result from its final comparison (null: measured before), with the run finished. */
  finish(final: FinalComparison<C> | null, say: SayPhase): Promise<OptimiseResult>;
  /** How the run ends when the wizard stops early: the error a caller gets (with how to go on). */
  fail(err: unknown): Promise<Error>;
}
