import { z } from 'zod';

import { BenchmarkPhasesSchema } from './benchmark';
import { IdSchema } from './ids';
import { ScriptAppliedSchema, ScriptOverridesSchema, ScriptTargetSchema } from './script-target';
import { TelemetrySummarySchema } from './telemetry';

/** The longest a script run may be given: setTimeout's limit is about 24.8 days. */
export const MAX_SCRIPT_RUN_SECONDS = 24 * 24 * 3600;

/**
 * `train.run` on a script target: one whole training run of the user's command, recorded as a run
 * of kind `train` whose config.target is the script. No step bound unless maxSteps.
 */
export const ScriptTrainRequestSchema = z
  .object({
    target: ScriptTargetSchema,
    overrides: ScriptOverridesSchema.default({}),
    /** Optimizer steps after which the probe ends the script; absent: it trains to its own end. */
    maxSteps: z.number().int().min(1).max(1e12).optional(),
    /** Steps left out of the steady-state figures (the first steps compile, warm caches, start workers). */
    warmupSteps: z.number().int().min(0).max(1e9).default(5),
    /** The run is killed with its process group after this long. */
    timeoutSeconds: z.number().min(1).max(MAX_SCRIPT_RUN_SECONDS).default(7 * 24 * 3600),
    /** The job's id, which names its run too: chosen by the caller so it can follow its events and cancel it (jobs.cancel) from the start. */
    jobId: IdSchema.optional(),
  })
  .strict();
export type ScriptTrainRequest = z.infer<typeof ScriptTrainRequestSchema>;
export type ScriptTrainRequestInput = z.input<typeof ScriptTrainRequestSchema>;

/** One point of a script run's curves: the steps since the previous point. */
export const ScriptRunPointSchema = z.object({
  /** ms since 1970. */
  t: z.number(),
  /** The latest optimizer step (rank 0's). */
  step: z.number().int(),
  /** Samples per second summed over the ranks, over the steps since the previous point; null before a step with a batch. */
  samplesPerSec: z.number().nullable(),
  /** Share of those steps' time blocked in the DataLoader (the slowest rank's), percent. */
  dataWaitPercent: z.number().nullable(),
  /** Mean training loss (rank 0) over the steps whose losses arrived since the previous point; null: none arrived (or not finite). */
  loss: z.number().nullable(),
  /** The last step that loss covers (losses are read in batches, so it trails `step`). */
  lossStep: z.number().int().nullable(),
});
export type ScriptRunPoint = z.infer<typeof ScriptRunPointSchema>;

/** `script.progress`: a script run's progress, at most ~10 per second. */
export const ScriptProgressEventSchema = ScriptRunPointSchema.extend({
  /** The run's job (its id names the run too). */
  jobId: z.string(),
  maxSteps: z.number().int().nullable(),
  /** Seconds since the command was started. */
  elapsedSeconds: z.number(),
});
export type ScriptProgressEvent = z.infer<typeof ScriptProgressEventSchema>;

export const ScriptOutputLineSchema = z.object({ stream: z.enum(['stdout', 'stderr']), line: z.string() });

/** What a script run recorded, stored as run.json's result whether it completed, failed or was cancelled. */
export const ScriptTrainResultSchema = z.object({
  runId: z.string(),
  runDir: z.string(),
  /** The command, as the Runs list names the run. */
  title: z.string(),
  target: ScriptTargetSchema,
  overrides: z.record(z.string(), z.union([z.number(), z.boolean(), z.string()])),
  applied: z.array(ScriptAppliedSchema),
  /** How it ended: on its own (exit), stopped by the probe at maxSteps, or not at all cleanly (failed, cancelled, timed out). */
  ended: z.enum(['exit', 'maxSteps', 'error']),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  seconds: z.number(),
  /** Optimizer steps rank 0 ran (what the script itself counts). */
  steps: z.number().int(),
  worldSize: z.number().int(),
  device: z.string(),
  batchSize: z.number().int().nullable(),
  warmupSteps: z.number().int(),
  /** Samples per second over the steps after the warm-up, summed over the ranks; absent when no step came after it (run.json's readers take a number or nothing). */
  samplesPerSec: z.number().optional(),
  stepTime: z.object({ steadyStateMeanMs: z.number().nullable(), wallClockMeanMs: z.number().nullable(), note: z.string() }),
  /** ms per step after the warm-up, rank 0 (h2d is not separated: it is in 'other'). */
  phasesMs: BenchmarkPhasesSchema.nullable(),
  timing: z.enum(['cuda-events', 'host-clock']),
  dataWait: z.object({ msPerStep: z.number(), percent: z.number() }).nullable(),
  /** The last finite loss read, and at which step; null when the probe read none. */
  lastLoss: z.object({ step: z.number().int(), value: z.number() }).nullable(),
  /** Why the loss curve is missing or stopped, when it is. */
  lossNote: z.string().nullable(),
  peakMemory: z.object({ cudaPeakBytes: z.number().nullable(), cudaTotalBytes: z.number().nullable(), hostPeakRssBytes: z.number().nullable() }),
  processTree: z.object({ processes: z.number().int(), cpuPercent: z.number().nullable(), peakRssBytes: z.number() }).nullable(),
  telemetry: TelemetrySummarySchema,
  /** The curves, thinned evenly to at most 2,000 points. */
  series: z.array(ScriptRunPointSchema),
  /** The whole output is in `file` (O/E prefixed lines); the last lines are kept here. */
  output: z.object({ file: z.string(), lines: z.number().int(), tail: z.array(ScriptOutputLineSchema) }),
});
export type ScriptTrainResult = z.infer<typeof ScriptTrainResultSchema>;
