// A training run's result, either target (ADR 0038): what every run measures at the top (steps, time,
// samples/s, step time, phases, telemetry), what only our engine or only a script's probe can tell inside
// `target`. The native trainer's own summary (`EngineTrainSummarySchema`) stays the engine runner's input.
import { z } from 'zod';

import { ScriptAppliedSchema, ScriptTargetSchema } from './script-target';
import { olderResult, omit, pick, type Raw } from './target-upgrade';
import { TelemetrySummarySchema } from './telemetry';
import { EngineTrainSummarySchema, PhasesSchema } from './training';

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

/** Milliseconds per optimizer step by phase; `other` (the step less its named phases) where the target measures it. */
export const TrainPhasesSchema = PhasesSchema.extend({ other: z.number().optional() });

/** What only our engine's run has: the model, the data, its evaluation, its memory model and threads (the trainer's summary). */
export const EngineTrainDetailSchema = EngineTrainSummarySchema.pick({
  samples: true,
  threads: true,
  backend: true,
  skippedSteps: true,
  lossScale: true,
  epochs: true,
  test: true,
  model: true,
  memory: true,
  processMemory: true,
}).extend({
  kind: z.literal('engine'),
  /** The cached datasets trained and tested on. */
  data: z.string(),
});

/** What only a script's run has: the command and its overrides, how it ended, its ranks' data wait and loss, its curves and output. */
export const ScriptTrainDetailSchema = z.object({
  kind: z.literal('script'),
  command: ScriptTargetSchema,
  overrides: z.record(z.string(), z.union([z.number(), z.boolean(), z.string()])),
  applied: z.array(ScriptAppliedSchema),
  /** How it ended: on its own (exit), stopped by the probe at maxSteps, or not at all cleanly (failed, cancelled, timed out). */
  ended: z.enum(['exit', 'maxSteps', 'error']),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  worldSize: z.number().int(),
  timing: z.enum(['cuda-events', 'host-clock']),
  dataWait: z.object({ msPerStep: z.number(), percent: z.number() }).nullable(),
  /** The last finite loss read, and at which step; null when the probe read none. */
  lastLoss: z.object({ step: z.number().int(), value: z.number() }).nullable(),
  /** Why the loss curve is missing or stopped, when it is. */
  lossNote: z.string().nullable(),
  peakMemory: z.object({ cudaPeakBytes: z.number().nullable(), cudaTotalBytes: z.number().nullable(), hostPeakRssBytes: z.number().nullable() }),
  processTree: z.object({ processes: z.number().int(), cpuPercent: z.number().nullable(), peakRssBytes: z.number() }).nullable(),
  /** The curves, thinned evenly to at most 2,000 points. */
  series: z.array(ScriptRunPointSchema),
  /**
   * Rank 0's loss at each step ([step, loss], the scalar the script gave backward()), thinned evenly to at most 2,000:
   * the series' losses are means over its points, which a run of a few hundred milliseconds has one or two of.
   * Absent from runs recorded before it was kept.
   */
  lossCurve: z.array(z.tuple([z.number(), z.number()])).default([]),
  /** The whole output is in `file` (O/E prefixed lines); the last lines are kept here. */
  output: z.object({ file: z.string(), lines: z.number().int(), tail: z.array(ScriptOutputLineSchema) }),
});
export type EngineTrainDetail = z.infer<typeof EngineTrainDetailSchema>;
export type ScriptTrainDetail = z.infer<typeof ScriptTrainDetailSchema>;

const TrainRunResultShape = z.object({
  runId: z.string(),
  /** Where the run's files are, relative to the workspace. */
  runDir: z.string(),
  /** e.g. "mlp on fashion-mnist-train (60000 records)", or the script's command. */
  title: z.string(),
  device: z.string(),
  /** Samples per optimizer step's micro-batch; null where a script's batches did not say (and in engine runs recorded before it was kept). */
  batchSize: z.number().int().nullable(),
  /** Optimizer steps (a script's: rank 0's, what the script itself counts). */
  steps: z.number().int(),
  seconds: z.number(),
  /**
   * Training samples per second: the engine's over the whole run's wall clock (warm-up and evaluation included),
   * a script's over the steps after the warm-up summed over its ranks; absent when a script's steps carried no batch.
   */
  samplesPerSec: z.number().optional(),
  stepTime: z.object({
    /** Every step, warm-up and evaluation included; null when a script ran no step. */
    wallClockMeanMs: z.number().nullable(),
    /** Steps after the first `warmupSteps` (a script's: the slowest rank's); null when too few steps ran. */
    steadyStateMeanMs: z.number().nullable(),
    warmupSteps: z.number().int(),
    note: z.string(),
  }),
  /** ms per step after the warm-up; null when a script measured no step (a script's h2d is in `other`). */
  phasesMs: TrainPhasesSchema.nullable(),
  /** GPU utilisation, memory and power (and CPU load) measured while the run trained. */
  telemetry: TelemetrySummarySchema,
  target: z.discriminatedUnion('kind', [EngineTrainDetailSchema, ScriptTrainDetailSchema]),
});
export type TrainRunResult = z.infer<typeof TrainRunResultShape>;

const ENGINE_OWN = ['samples', 'threads', 'backend', 'skippedSteps', 'lossScale', 'epochs', 'test', 'model', 'data', 'memory', 'processMemory'] as const;
const SCRIPT_OWN = ['overrides', 'applied', 'ended', 'exitCode', 'signal', 'worldSize', 'timing', 'dataWait', 'lastLoss', 'lossNote', 'peakMemory', 'processTree', 'series', 'output'] as const;

/**
 * A run written before both targets shared one shape: the engine's flat (no title, device or batch size: named from
 * its model and data, its device from its backend), a script's with the command as `target` and its warm-up at the
 * top. Their own fields move into `target`; a result already in the shape passes as it is.
 */
function upgradeTrainRun(raw: unknown): unknown {
  const older = olderResult(raw);
  if (!older) return raw;
  const { r, oldScript } = older;
  if (oldScript) {
    const stepTime = { ...(r.stepTime as Raw | undefined), warmupSteps: r.warmupSteps };
    return { ...omit(r, [...SCRIPT_OWN, 'target', 'warmupSteps', 'stepTime']), stepTime, target: { kind: 'script', command: r.target, ...pick(r, SCRIPT_OWN) } };
  }
  const model = r.model as Raw | undefined;
  const backend = r.backend as Raw | undefined;
  return {
    title: `${String(model?.family ?? 'model')} on ${String(r.data ?? 'data')}`,
    device: typeof backend?.device === 'string' ? backend.device : 'cpu',
    batchSize: null,
    ...omit(r, ENGINE_OWN),
    target: { kind: 'engine', ...pick(r, ENGINE_OWN) },
  };
}

/** `train.run`'s result, either target (older run files are read through upgradeTrainRun). */
export const TrainRunResultSchema = z.preprocess(upgradeTrainRun, TrainRunResultShape);

/** An engine run's result: its phases and rate are always measured. */
export type EngineTrainRun = Omit<TrainRunResult, 'target' | 'phasesMs' | 'samplesPerSec'> & {
  target: EngineTrainDetail;
  phasesMs: NonNullable<TrainRunResult['phasesMs']>;
  samplesPerSec: number;
};
export type ScriptTrainRun = Omit<TrainRunResult, 'target'> & { target: ScriptTrainDetail };

export const isEngineTrainRun = (r: TrainRunResult): r is EngineTrainRun => r.target.kind === 'engine';
export const isScriptTrainRun = (r: TrainRunResult): r is ScriptTrainRun => r.target.kind === 'script';
