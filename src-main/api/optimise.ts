import { z } from 'zod';

import { datasetNameOfId } from './datasets';
import { BenchmarkOptionsSchema, BenchmarkPhasesSchema, IntervalSchema } from './benchmark';
import { IdSchema } from './ids';
import { ConditionsSchema } from './telemetry';
import { TargetKindSchema } from './target';
import { ModelSpecSchema, modelWords } from './model-spec';
import { DataSourceSchema } from './training';
import { withMedianLevel } from './target-upgrade';

/**
 * The optimisation wizard's contract (issue 12): a baseline, a diagnosis, the
 * physical limits, then one change at a time measured A/B/A/B against the
 * current best, kept only when its speedup beats the noise.
 */

/** max-speed: every change may be tried; reproducible: nothing that alters numerics (fp32, fixed seed); balanced: numerics changes only where the loss guard holds. */
export const OptimisePresetSchema = z.enum(['max-speed', 'reproducible', 'balanced']);
export type OptimisePreset = z.infer<typeof OptimisePresetSchema>;

/** Where the training data is read from: the cache, or the source files in place (the uncached path). */
export const ReadFromSchema = z.enum(['cache', 'source']);
export type ReadFrom = z.infer<typeof ReadFromSchema>;

/** The training configuration being optimised: the user's current settings. */
export const OptimiseTargetSchema = z
  .object({
    spec: ModelSpecSchema,
    data: DataSourceSchema,
    options: BenchmarkOptionsSchema.default(BenchmarkOptionsSchema.parse({})),
    readFrom: ReadFromSchema.default('cache'),
  })
  .strict();
export type OptimiseTarget = z.infer<typeof OptimiseTargetSchema>;
export type OptimiseTargetInput = z.input<typeof OptimiseTargetSchema>;

/**
 * "mlp on fashion-mnist", "bottleneck_resnet on example-board": an engine wizard's model and data in a few words,
 * the same in the Optimise area, the Runs list and the CLI's list of runs (issue 41 item 4).
 */
export function optimiseTargetTitle(target: { spec: { family: string } & Record<string, unknown>; data: OptimiseTarget['data']; readFrom?: ReadFrom }): string {
  const d = target.data;
  const data = d.kind === 'dataset' ? `dataset ${datasetNameOfId(d.train)}` : d.kind === 'idx' ? 'IDX files' : d.kind;
  return `${modelWords(target.spec)} on ${data}${target.readFrom === 'source' ? ' (read from the source files)' : ''}`;
}

/**
 * What the wizard does when the two sides of an A/B pair saw different conditions (another process's load,
 * a GPU slowing down): remeasure the pair (twice at most per comparison) and leave a trial undecided,
 * "confounded", when they still differ; or only record them (a shared machine whose load comes and goes).
 */
export const ConfounderPolicySchema = z.enum(['remeasure', 'record']);
export type ConfounderPolicy = z.infer<typeof ConfounderPolicySchema>;

/** What the wizard makes larger: samples per second, or samples per joule of GPU energy (a CUDA target with power readings). */
export const WizardObjectiveSchema = z.enum(['throughput', 'energy']);
export type WizardObjective = z.infer<typeof WizardObjectiveSchema>;

export const OptimiseRequestSchema = z
  .object({
    target: OptimiseTargetSchema,
    preset: OptimisePresetSchema.default('balanced'),
    /** Repetitions of the baseline, and of each side of every trial (A/B/A/B interleaved). */
    repeat: z.number().int().min(2).max(50).default(5),
    /** Optimizer steps measured per repetition, after the warm-up. */
    steps: z.number().int().min(1).max(100_000).default(50),
    warmupSteps: z.number().int().min(0).max(10_000).default(5),
    /**
     * The shortest measured window a repetition may have, in seconds (0: as `steps` says). When the
     * baseline's steps measure less, the wizard raises `steps` to about this and measures the baseline
     * again: a window of a few launches is noise (an H100 measured 8 steps in 60 ms, ±11.5%).
     */
    minWindowSeconds: z.number().min(0).max(60).default(0),
    /** Most trials run before the wizard stops (coordinate ascent stops earlier when no change helps). */
    maxTrials: z.number().int().min(0).max(200).default(12),
    /** Batch size and gradient accumulation change the training recipe: measured and proposed, but kept only when this is set. */
    allowRecipeChanges: z.boolean().default(false),
    /**
     * Take the batch-size candidate from the batch-size search where there is memory to search (a CUDA device,
     * or a CPU memory limit); off, or where there is none, the candidate is twice the batch.
     */
    batchSearch: z.boolean().default(true),
    /** Largest relative difference of the mean loss over the measured steps (same seed) a kept change may make. */
    lossTolerance: z.number().gt(0).max(1).default(0.05),
    confounders: ConfounderPolicySchema.default('remeasure'),
    objective: WizardObjectiveSchema.default('throughput'),
    /** Chosen by the caller so it can follow and cancel from the first event; made up otherwise. */
    jobId: IdSchema.optional(),
  })
  .strict();
export type OptimiseRequest = z.infer<typeof OptimiseRequestSchema>;
export type OptimiseRequestInput = z.input<typeof OptimiseRequestSchema>;

/** pipeline: data loading only; numerics: alters the arithmetic (precision); recipe: alters the training recipe (batch, accumulation). */
export const ChangeKindSchema = z.enum(['pipeline', 'numerics', 'recipe']);

/** One setting changed on top of the current best. */
export const OptimiseChangeSchema = z.object({
  /** The setting: loaderWorkers, prefetch, gpuPrefetch, readFrom, batchSize, accumulation, precision, cudaGraph, sampleRatio. */
  knob: z.string(),
  from: z.union([z.string(), z.number(), z.boolean()]),
  to: z.union([z.string(), z.number(), z.boolean()]),
  kind: ChangeKindSchema,
  /** e.g. "loader workers 0 -> 2" */
  label: z.string(),
  /** Why it is tried now, from the diagnosis (e.g. "data wait is 63% of the step"). */
  hypothesis: z.string(),
  /** Recipe changes only: what else has to change with it (learning-rate scaling). */
  note: z.string().nullable(),
});
export type OptimiseChange = z.infer<typeof OptimiseChangeSchema>;

/**
 * accept: kept; reject: the whole CI is below 1; inconclusive: could be noise;
 * crashed: the engine host died or ran out of memory; changes-results: the loss
 * moved beyond the tolerance; proposed: a recipe change that beat the noise but
 * is not kept without allowRecipeChanges.
 */
export const TrialDecisionSchema = z.enum(['accept', 'reject', 'inconclusive', 'crashed', 'changes-results', 'proposed', 'confounded']);
export type TrialDecision = z.infer<typeof TrialDecisionSchema>;


/** One repetition of an A/B comparison with the machine's conditions around it: the report's Conditions table. */
export const ConditionsRowSchema = z.object({
  pair: z.number().int().min(1),
  side: z.enum(['best', 'candidate']),
  samplesPerSec: z.number(),
  conditions: ConditionsSchema.nullable(),
  /** What differed between the pair's two sides when it was measured again; null for a pair that counts. */
  remeasured: z.string().max(2000).nullable(),
});
export type ConditionsRow = z.infer<typeof ConditionsRowSchema>;

export const OptimiseTrialSchema = z.object({
  index: z.number().int().min(1),
  change: OptimiseChangeSchema,
  decision: TrialDecisionSchema,
  why: z.string(),
  /** Candidate over the current best, samples/s: paired ratios of the interleaved repetitions; null when the trial did not finish. */
  speedup: IntervalSchema.nullable(),
  /** samples/s of each repetition, in the order measured (A/B/A/B). */
  bestSamplesPerSec: z.array(z.number()),
  candidateSamplesPerSec: z.array(z.number()),
  /** Samples per joule of GPU energy of each repetition, where every one had power readings; the energy objective decides on these. */
  bestSamplesPerJoule: z.array(z.number()).optional(),
  candidateSamplesPerJoule: z.array(z.number()).optional(),
  /** Relative difference of the mean loss over the measured steps, candidate vs best; null when not measured. */
  lossDelta: z.number().nullable(),
  kept: z.boolean(),
  /**
   * An inconclusive trial whose interval lay wholly above (faster) or below (slower) 1 but covered less than
   * the 90% a decision needs (few pairs): shown as "leaning faster, 75%". Absent otherwise.
   */
  lean: z.enum(['faster', 'slower']).optional(),
  seconds: z.number(),
  /** The engine's words for a crash or an OOM. */
  error: z.string().nullable(),
  /** Every repetition of the trial with the machine's conditions, re-measured pairs included; absent in older runs. */
  conditions: z.array(ConditionsRowSchema).max(400).optional(),
  /**
   * A compile trial (a script's compile.mode): the compile time one launch paid at its first steps (outside the
   * measured window), the compilations, those that fell in the measured steps, and the step it pays off at.
   */
  compile: z
    .object({
      seconds: z.number().min(0),
      compilations: z.number().int().min(0),
      inMeasuredSteps: z.number().int().min(0),
      /** Steps after which the time saved per step has repaid the compile time; null: the compiled step is not faster. */
      payoffSteps: z.number().int().min(1).nullable(),
      /**
       * The first launch's compile, with its caches cold, run before the measured pairs (absent in older runs): what a
       * person pays once, and the steps that repay it.
       */
      coldSeconds: z.number().min(0).optional(),
      coldPayoffSteps: z.number().int().min(1).nullable().optional(),
    })
    .optional(),
});
export type OptimiseTrial = z.infer<typeof OptimiseTrialSchema>;
export type TrialCompile = NonNullable<OptimiseTrial['compile']>;

/** A change not tried, and why (not applicable on this device, refused by the preset). */
export const SkippedChangeSchema = z.object({ change: OptimiseChangeSchema, why: z.string() });
export type SkippedChange = z.infer<typeof SkippedChangeSchema>;

/** A diagnosis finding; `id` names the rule of the decision tree, `measurement` the number it rests on. */
export const DiagnosisFindingSchema = z.object({
  id: z.string(),
  severity: z.enum(['info', 'warning']),
  text: z.string(),
  measurement: z.object({ name: z.string(), value: z.number(), unit: z.string() }),
});
export type DiagnosisFinding = z.infer<typeof DiagnosisFindingSchema>;

export const DiagnosisSchema = z.object({
  /** The verdict in one word: what bounds the step. */
  bound: z.enum(['data', 'h2d', 'compute', 'communication', 'host-overhead', 'unknown']),
  summary: z.string(),
  findings: z.array(DiagnosisFindingSchema),
});
export type Diagnosis = z.infer<typeof DiagnosisSchema>;

/** A floor the hardware sets, from a measured rate; null fields say what could not be measured and why. */
export const LimitSchema = z.object({
  /** Milliseconds per optimizer step this floor allows; null when not measured. */
  stepMs: z.number().nullable(),
  /** The same as samples/s. */
  samplesPerSec: z.number().nullable(),
  /** Baseline step over this floor (1 = at the floor). */
  baselineOverFloor: z.number().nullable(),
  /** How it was computed, with every number. */
  derivation: z.string(),
});
export type Limit = z.infer<typeof LimitSchema>;

export const LimitsSchema = z.object({
  compute: LimitSchema.extend({ flopsPerSample: z.number(), gemmGflops: z.number().nullable(), gemmShape: z.string().nullable() }),
  /** Reading the batch's bytes at the measured sequential-read rate of the files the target reads. */
  read: LimitSchema.extend({ bytesPerSample: z.number(), readMBps: z.number().nullable() }),
  /** Copying the batch to the device at the measured host-to-device rate (CUDA only). */
  h2d: LimitSchema.extend({ h2dMBps: z.number().nullable() }),
  /** The slowest floor: no setting of this pipeline can beat it. */
  floorStepMs: z.number().nullable(),
  summary: z.string(),
});
export type Limits = z.infer<typeof LimitsSchema>;

/** The settings a trial measures: the benchmark options plus where the data is read from. */
export const OptimiseConfigSchema = z.object({ options: BenchmarkOptionsSchema, readFrom: ReadFromSchema });
export type OptimiseConfig = z.infer<typeof OptimiseConfigSchema>;

/**
 * What every wizard's baseline, final and result hold, whichever target it optimised (issue 25): the engine's
 * and the script's results extend these, so the two cannot drift apart again.
 */
export const WizardBaselineSchema = z.object({
  samplesPerSec: IntervalSchema,
  repetitions: z.array(z.number()),
  /** Relative half width of the median's interval (see IntervalSchema's coverage): a change must gain more than this. */
  noiseFloor: z.number(),
  stepMs: z.number(),
  phasesMs: BenchmarkPhasesSchema,
  phasesPercent: BenchmarkPhasesSchema,
  device: z.string(),
  /** Samples per joule of GPU energy, median with its CI, where every repetition had power readings. */
  samplesPerJoule: IntervalSchema.optional(),
  /**
   * A job of several ranks (a script under torchrun): the median share of the step its launches waited in DDP's
   * all-reduces after the last rank arrived, and the straggler their collectives named (null: none).
   */
  collectives: z.object({ exposedShare: z.number(), straggler: z.number().int().nullable(), phase: z.enum(['data', 'compute', 'host']).nullable() }).optional(),
});
export const WizardFinalSchema = z.object({
  /** The kept changes, in order. */
  changes: z.array(z.string()),
  /** Final over baseline, measured A/B/A/B at the end (1 when nothing was kept). */
  speedup: IntervalSchema,
  samplesPerSec: IntervalSchema,
  /** The baseline as re-measured in that final comparison (absent when nothing was kept, and in older runs). */
  baselineSamplesPerSec: IntervalSchema.optional(),
  /** In words, honest when noise makes the measured speedup small or below 1. */
  verdict: z.string(),
  /** Recipe changes that beat the noise but were not kept (allowRecipeChanges off). */
  proposals: z.array(z.string()),
  /** The final comparison's repetitions with their conditions; absent when nothing was measured (or in older runs). */
  conditions: z.array(ConditionsRowSchema).max(400).optional(),
});
export const WizardResultSchema = z.object({
  /** The run of kind `optimise` this session recorded into (a resumed wizard records a new run). */
  runId: z.string(),
  runDir: z.string(),
  title: z.string(),
  preset: OptimisePresetSchema,
  repeat: z.number().int(),
  /** What the trials and the final compared (absent in older runs: samples/s). */
  objective: WizardObjectiveSchema.optional(),
  baseline: WizardBaselineSchema,
  trials: z.array(OptimiseTrialSchema),
  skipped: z.array(SkippedChangeSchema),
  final: WizardFinalSchema,
  seconds: z.number(),
});
export type WizardResult = z.infer<typeof WizardResultSchema>;

/** What only the engine's baseline measures: its configuration, resources and the loss guard's reference. */
export const EngineBaselineDetailSchema = z.object({
  config: OptimiseConfigSchema,
  cpuMean: z.number().nullable(),
  gpuUtilizationMean: z.number().nullable(),
  memoryBytes: z.number(),
  deviceTotalBytes: z.number().nullable(),
  /** Mean loss over the measured steps: the reference of the loss guard. */
  meanLoss: z.number().nullable(),
});
export const OptimiseBaselineSchema = WizardBaselineSchema.merge(EngineBaselineDetailSchema);
export type OptimiseBaseline = z.infer<typeof OptimiseBaselineSchema>;

export const OptimiseFinalSchema = WizardFinalSchema.extend({ config: OptimiseConfigSchema });
export type OptimiseFinal = z.infer<typeof OptimiseFinalSchema>;

export const OptimiseStatusSchema = z.enum(['running', 'completed', 'cancelled', 'failed']);
export type OptimiseStatus = z.infer<typeof OptimiseStatusSchema>;

/** Steps per repetition raised because the baseline's window was under the request's minWindowSeconds. */
export const StepsWidenedSchema = z.object({ from: z.number().int(), to: z.number().int(), windowMs: z.number(), minWindowSeconds: z.number() });
export type StepsWidened = z.infer<typeof StepsWidenedSchema>;

// The wizard's result, either target: api/optimise-result.ts.

/**
 * What the wizard saves after every step, so a restarted app resumes it. Version 2 names the wizard's id
 * `jobId` (version 1 said `optimiseId`, in the state and in its request; core/targets/wizard-state.ts reads both).
 */
export const WizardStateSchema = z.object({
  schemaVersion: z.literal(2),
  /** Ids from the file become paths (optimise/<id>, runs/<id>): re-validated as ids when read. */
  jobId: IdSchema,
  request: OptimiseRequestSchema,
  status: OptimiseStatusSchema,
  /** Every run that recorded part of this wizard, oldest first. */
  runIds: z.array(IdSchema),
  /** A state saved before intervals carried their level reads its baseline's at its true level (ADR 0045). */
  baseline: z.preprocess((b) => withMedianLevel(b, 'samplesPerSec'), OptimiseBaselineSchema.nullable()),
  /** Set when the first baseline's window was too short and `request.steps` was raised (that baseline discarded). */
  stepsWidened: StepsWidenedSchema.nullable().default(null),
  diagnosis: DiagnosisSchema.nullable(),
  limits: LimitsSchema.nullable(),
  /** The current best configuration: the baseline's plus every kept change. */
  best: OptimiseConfigSchema,
  trials: z.array(OptimiseTrialSchema),
  skipped: z.array(SkippedChangeSchema),
  /** What the batch-size search recommended for the batch-size candidate (null: not run, with the reason in `verdict`). */
  batchSearch: z.object({ recommended: z.number().int().nullable(), runId: IdSchema.nullable(), verdict: z.string() }).nullable().default(null),
  /** Knobs tried without a kept change since the last kept one: coordinate ascent stops when every knob is here. */
  exhausted: z.array(z.string()),
  final: OptimiseFinalSchema.nullable(),
  /** Why it stopped early, e.g. "optimisation cancelled after 3 trials; ...". */
  message: z.string().nullable(),
  updatedAt: z.string(),
  seconds: z.number(),
});
export type WizardState = z.infer<typeof WizardStateSchema>;

/** Streamed as `optimise.progress`. */
export const OptimiseProgressSchema = z.object({
  jobId: z.string(),
  /** Which wizard: the engine's or a script's (one event for both). */
  target: TargetKindSchema,
  runId: z.string().nullable(),
  phase: z.enum(['preparing', 'baseline', 'limits', 'batch-search', 'trial', 'final', 'done']),
  /** The trial running (phase 'trial'), 1-based; null otherwise. */
  trial: z.number().int().nullable(),
  maxTrials: z.number().int(),
  /** Repetitions done of those this phase needs. */
  repetition: z.number().int(),
  repetitions: z.number().int(),
  /** The change being measured, in words. */
  label: z.string().nullable(),
  elapsedSeconds: z.number(),
  /** Estimated seconds left (from the measured repetition time and the trials left); null before the first repetition. */
  etaSeconds: z.number().nullable(),
  /** Set when a trial has just finished. */
  finishedTrial: OptimiseTrialSchema.nullable(),
});
export type OptimiseProgress = z.infer<typeof OptimiseProgressSchema>;

export const OptimiseIdParamsSchema = z.object({ jobId: IdSchema }).strict();
