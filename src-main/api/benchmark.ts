import { z } from 'zod';

import { IdSchema } from './ids';
import { TargetKindSchema } from './target';
import { ModelSpecSchema } from './model-spec';
import { DataSourceSchema, OptimizerSchema, TrainOptionsSchema } from './training';

/** The named phases of a step, in the order bars stack; `other` is the step minus all of them. */
export const PHASE_NAMES = ['data', 'h2d', 'forward', 'loss', 'backward', 'optimizer'] as const;
export type PhaseName = (typeof PHASE_NAMES)[number];
export const PHASE_NAMES_WITH_OTHER = [...PHASE_NAMES, 'other'] as const;

export const BenchmarkPhasesSchema = z.object({
  data: z.number(),
  h2d: z.number(),
  forward: z.number(),
  loss: z.number(),
  backward: z.number(),
  optimizer: z.number(),
  other: z.number(),
});
export type BenchmarkPhases = z.infer<typeof BenchmarkPhasesSchema>;

/**
 * The training options a benchmark varies; the service sets the rest (steps,
 * warm-up, no evaluation, no checkpoint), so they are not accepted here.
 */
export const BenchmarkOptionsSchema = TrainOptionsSchema.omit({ epochs: true, maxSteps: true, warmupSteps: true, eventIntervalMs: true, evalBatchSize: true }).extend({
  /** Absent: the optimizer the model family trains with (its update is part of the step's cost). */
  optimizer: OptimizerSchema.optional(),
});

export const TrainingBenchmarkRequestSchema = z
  .object({
    spec: ModelSpecSchema,
    data: DataSourceSchema,
    options: BenchmarkOptionsSchema.default(BenchmarkOptionsSchema.parse({})),
    /** Optimizer steps run before the steady-state clock starts, in every repetition. */
    warmupSteps: z.number().int().min(0).max(100_000).default(5),
    /** Optimizer steps measured after the warm-up, in every repetition. */
    steps: z.number().int().min(1).max(1_000_000).default(50),
    /** Repetitions, each a fresh engine trainer (cold caches and freshly initialised weights every time). */
    repeat: z.number().int().min(1).max(100).default(3),
    /** A job id chosen by the caller, so it can follow progress and cancel; one is made up otherwise. */
    jobId: IdSchema.optional(),
  })
  .strict();
export type TrainingBenchmarkRequest = z.infer<typeof TrainingBenchmarkRequestSchema>;
export type TrainingBenchmarkRequestInput = z.input<typeof TrainingBenchmarkRequestSchema>;

export const FindingSchema = z.object({
  severity: z.enum(['info', 'warning']),
  text: z.string(),
  /** The number the finding rests on. */
  measurement: z.object({ name: z.string(), value: z.number(), unit: z.string() }),
});
export type Finding = z.infer<typeof FindingSchema>;

export const IntervalSchema = z.object({
  low: z.number(),
  median: z.number(),
  high: z.number(),
  /** Only where it is below 95%: the true coverage of an interval over few repetitions (75% for 3). */
  coverage: z.number().min(0).max(1).optional(),
});

/** Achieved training FLOP/s against the peaks it could reach: MFU, never above 100% (a value that would be is a problem instead). */
/** GPU energy per sample over a benchmark's measured windows: mean power over samples per second. */
export const EnergySchema = z.object({ joulesPerSample: z.number(), samplesPerJoule: z.number(), meanPowerW: z.number(), seconds: z.number() });
export type Energy = z.infer<typeof EnergySchema>;

export const UtilisationSchema = z.object({
  /** Training FLOPs per sample: three forward passes' worth (forward, backward for inputs and for weights). */
  trainingFlopsPerSample: z.number(),
  achievedGflops: z.number(),
  /** The engine's best GEMM on this device now, at its current clocks, in the precision trained; MFU against it. */
  measured: z.object({ gflops: z.number(), how: z.string(), shape: z.string(), mfu: z.number().nullable() }).nullable(),
  measuredMissing: z.string().nullable(),
  /** The maker's dense peak for this device and precision, with its source; null for a CPU or a device not in the table. */
  datasheet: z.object({ device: z.string(), precision: z.string(), gflops: z.number(), source: z.string(), mfu: z.number().nullable() }).nullable(),
  /** Why a utilisation is not shown (above 100% of a peak is a measurement error, not a result). */
  problems: z.array(z.string()),
});
export type Utilisation = z.infer<typeof UtilisationSchema>;


/** Streamed while a benchmark runs, as `benchmark.progress`. */
/** The most ranks a progress event lists (a job of thousands says how many more there are elsewhere: its result). */
export const RANKS_SHOWN = 64;

export const BenchmarkProgressSchema = z.object({
  jobId: z.string(),
  /** What is benchmarked: the engine's configuration or the user's command (one event for both). */
  target: TargetKindSchema,
  /** null while the data is being prepared, before the run exists. */
  runId: z.string().nullable(),
  /**
   * 'stopping' (a script's): the probe has ended the launch after its measured steps, on purpose, and the
   * process is exiting; a launch that fails after it is still a failure.
   */
  phase: z.enum(['preparing', 'warmup', 'measuring', 'stopping', 'repetition-done']),
  repetition: z.number().int(),
  repetitions: z.number().int(),
  /** Optimizer steps done in this repetition, of warm-up plus measured steps. */
  step: z.number().int(),
  totalSteps: z.number().int(),
  /** Warm-up steps of every repetition (the first `warmupSteps` steps are not measured). */
  warmupSteps: z.number().int(),
  /** Measured steps of every repetition; null: a script measured until it ends on its own. */
  steps: z.number().int().nullable(),
  /** Set on 'repetition-done'. */
  samplesPerSec: z.number().nullable(),
  /**
   * A script's job of several ranks: each rank heard in this launch so far, with its node and latest step; a rank
   * is said as soon as its first step arrives (a node joining from another machine shows at once). Absent: one rank.
   */
  ranks: z.array(z.object({ rank: z.number().int(), node: z.string().nullable(), nodeRank: z.number().int().nullable(), step: z.number().int() })).max(RANKS_SHOWN).optional(),
});
export type BenchmarkProgress = z.infer<typeof BenchmarkProgressSchema>;
