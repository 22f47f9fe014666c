// A training benchmark's result, either target (ADR 0038): what every benchmark measures at the top, what
// only our engine or only a script's probe can tell inside `target`, for the result and for each repetition.
import { z } from 'zod';

import { BenchmarkPhasesSchema, EnergySchema, FindingSchema, IntervalSchema, UtilisationSchema } from './benchmark';
import { ScriptCollectivesSchema } from './collectives';
import { ScriptAppliedSchema, ScriptFloorsSchema, ScriptFlopsSchema, ScriptRankSchema, ScriptTargetSchema } from './script-target';
import { olderResult, omit, pick, type Raw, withMedianLevel } from './target-upgrade';
import { TelemetrySummarySchema } from './telemetry';
import { MemoryBreakdownSchema, ProcessMemorySchema } from './training';

/** The engine's accounting of one repetition: its memory model beside its allocations, and the process's resident memory. */
export const EngineRepetitionDetailSchema = z.object({
  kind: z.literal('engine'),
  /** How many measured steps the phases were averaged over (step events wholly after the warm-up). */
  phaseSteps: z.number().int(),
  memory: z.object({ predicted: MemoryBreakdownSchema, measured: MemoryBreakdownSchema, device: z.string() }),
  /** The engine process's resident memory over this repetition, beside the engine's accounting; absent in older runs. */
  processMemory: ProcessMemorySchema.optional(),
});
/** One launch of a script: its ranks, how it ended, and its process tree. */
export const ScriptRepetitionDetailSchema = z.object({
  kind: z.literal('script'),
  ranks: z.array(ScriptRankSchema),
  /** How the launch ended: the probe stopped it after the measured steps, or the script ended on its own. */
  ended: z.enum(['steps', 'exit']),
  exitCode: z.number().int().nullable(),
  seconds: z.number(),
  /**
   * The launch's whole process tree (ranks, DataLoader workers), Linux only: most processes at once, their
   * CPU over the measured window in percent of one core, and their largest summed resident memory.
   */
  processTree: z.object({ processes: z.number().int(), cpuPercent: z.number().nullable(), peakRssBytes: z.number() }).nullable(),
});

/** What one repetition (a fresh engine trainer, or a fresh launch of the command) measured. */
export const BenchmarkRepetitionSchema = z.object({
  repetition: z.number().int(),
  /** Training samples per second over the measured steps (warm-up excluded); a script's summed over its ranks. */
  samplesPerSec: z.number(),
  steadyStateMeanMs: z.number(),
  wallClockMeanMs: z.number(),
  /** Milliseconds per step in each phase over the measured steps; `other` = steady step minus the named phases. */
  phasesMs: BenchmarkPhasesSchema,
  /** Set when the named phases add up to more than the step (the timers overlap); `other` is then 0. */
  namedPhasesExceedStepMs: z.number().nullable(),
  telemetry: TelemetrySummarySchema,
  target: z.discriminatedUnion('kind', [EngineRepetitionDetailSchema, ScriptRepetitionDetailSchema]),
});
export type BenchmarkRepetition = z.infer<typeof BenchmarkRepetitionSchema>;

/** What only the engine's benchmark has: the data and recipe it trained, the epoch it predicts, its memory model. */
export const EngineBenchmarkDetailSchema = z.object({
  kind: z.literal('engine'),
  data: z.string(),
  precision: z.string(),
  /** The optimizer every repetition stepped with, e.g. 'adamw'. */
  optimizer: z.string(),
  accumulation: z.number().int(),
  /** Optimizer steps in one epoch: records x sampleRatio / (batch x accumulation). */
  stepsPerEpoch: z.number().int(),
  predictedEpochSeconds: z.object({ fromSteadyState: z.number(), fromWallClock: z.number() }),
  memory: z.object({
    predicted: MemoryBreakdownSchema,
    measured: MemoryBreakdownSchema,
    device: z.string(),
    /** The device's memory, when known (GPUs); null on the CPU. */
    deviceTotalBytes: z.number().nullable(),
  }),
});
/** What only a script's benchmark has: the command and its overrides, its ranks, data wait, FLOPs and floors. */
export const ScriptBenchmarkDetailSchema = z.object({
  kind: z.literal('script'),
  command: ScriptTargetSchema,
  overrides: z.record(z.string(), z.union([z.number(), z.boolean(), z.string()])),
  applied: z.array(ScriptAppliedSchema),
  worldSize: z.number().int(),
  phaseNote: z.string(),
  /** The slowest rank's data wait (the one the others wait for at every collective). */
  dataWait: z.object({ rank: z.number().int(), msPerStep: z.number(), percent: z.number() }),
  /** Per rank, from the last launch. */
  ranks: z.array(ScriptRankSchema),
  /** A job of several ranks at its collectives, from the last launch (issue 40); absent for one process or no DDP model. */
  collectives: ScriptCollectivesSchema.optional(),
  memory: z.object({ device: z.string(), cudaPeakBytes: z.number().nullable(), cudaTotalBytes: z.number().nullable(), hostPeakRssBytes: z.number().nullable() }),
  /** The probe's count of the model's forward FLOPs per sample (an estimate; `method` says what it counts, or why not); absent in older runs. */
  flops: ScriptFlopsSchema.nullable().optional(),
  /** Compute, copy and data floors per step beside the measured step; absent in older runs. */
  floors: ScriptFloorsSchema.optional(),
});
export type EngineBenchmarkDetail = z.infer<typeof EngineBenchmarkDetailSchema>;
export type ScriptBenchmarkDetail = z.infer<typeof ScriptBenchmarkDetailSchema>;

const BenchmarkResultShape = z.object({
  runId: z.string(),
  runDir: z.string(),
  /** e.g. "mlp on fashion-mnist-train (60000 records)", or the script's command. */
  title: z.string(),
  device: z.string(),
  /** Samples per optimizer step's micro-batch; null where a script's batches did not say. */
  batchSize: z.number().int().nullable(),
  warmupSteps: z.number().int(),
  /** Measured steps per repetition (a script's: the fewest any rank measured). */
  steps: z.number().int(),
  repeat: z.number().int(),
  /** Median samples/s over the repetitions (also what the Runs list shows). */
  samplesPerSec: z.number(),
  /** Median of samples/s over the repetitions, with its order-statistic interval (95%, or its true coverage below 6 repetitions). */
  samplesPerSecCi: IntervalSchema,
  stepTime: z.object({
    /** Mean over the measured steps of every repetition. */
    steadyStateMeanMs: z.number(),
    /** Mean over every step of every repetition, warm-up included. */
    wallClockMeanMs: z.number(),
    note: z.string(),
  }),
  phasesMs: BenchmarkPhasesSchema,
  /** Each phase's share of the step in percent; they sum to 100. */
  phasesPercent: BenchmarkPhasesSchema,
  namedPhasesExceedStepMs: z.number().nullable(),
  /** Telemetry over the measured steps of every repetition. */
  telemetry: TelemetrySummarySchema,
  findings: z.array(FindingSchema),
  /** Model-FLOPs utilisation; absent in runs recorded before it was measured (or a script's without counted FLOPs). */
  utilisation: UtilisationSchema.optional(),
  /** GPU energy per sample: the GPUs' power integrated over the measured windows (a CUDA device); null with `energyMissing` saying why. */
  energy: EnergySchema.nullable().optional(),
  energyMissing: z.string().nullable().optional(),
  repetitions: z.array(BenchmarkRepetitionSchema),
  target: z.discriminatedUnion('kind', [EngineBenchmarkDetailSchema, ScriptBenchmarkDetailSchema]),
});
export type BenchmarkResult = z.infer<typeof BenchmarkResultShape>;

const ENGINE_REP = ['phaseSteps', 'memory', 'processMemory'] as const;
const SCRIPT_REP = ['ranks', 'ended', 'exitCode', 'seconds', 'processTree'] as const;
const ENGINE_RESULT = ['data', 'precision', 'optimizer', 'accumulation', 'stepsPerEpoch', 'predictedEpochSeconds', 'memory'] as const;
const SCRIPT_RESULT = ['overrides', 'applied', 'worldSize', 'phaseNote', 'dataWait', 'ranks', 'memory', 'flops', 'floors'] as const;

/**
 * A benchmark written before both targets shared one shape: the engine's flat (no `target`), a script's with the
 * command as `target` (its `command` a list). Their own fields are moved into `target`, for the result and for each
 * repetition; a result already in the shape passes as it is.
 */
function upgradeBenchmark(raw: unknown): unknown {
  const older = olderResult(raw);
  if (!older) return raw;
  const { r, oldScript } = older;
  const target = r.target as Raw | undefined;
  const [own, repOwn, kind] = oldScript ? [SCRIPT_RESULT, SCRIPT_REP, 'script'] : [ENGINE_RESULT, ENGINE_REP, 'engine'];
  const repetitions = Array.isArray(r.repetitions) ? (r.repetitions as Raw[]).map((x) => ({ ...omit(x, repOwn), target: { kind, ...pick(x, repOwn) } })) : r.repetitions;
  const detail = oldScript ? { kind, command: target, ...pick(r, own) } : { kind, ...pick(r, own) };
  return { ...omit(r, [...own, 'target']), repetitions, target: detail };
}

/** A training benchmark's result, either target (older run files are read through upgradeBenchmark). */
export const BenchmarkResultSchema = z.preprocess((raw) => withMedianLevel(upgradeBenchmark(raw), 'samplesPerSecCi'), BenchmarkResultShape);

export type EngineRepetition = Omit<BenchmarkRepetition, 'target'> & { target: z.infer<typeof EngineRepetitionDetailSchema> };
export type ScriptRepetition = Omit<BenchmarkRepetition, 'target'> & { target: z.infer<typeof ScriptRepetitionDetailSchema> };
/** An engine benchmark's result: its batch is known, its repetitions are the engine's. */
export type EngineBenchmarkResult = Omit<BenchmarkResult, 'batchSize' | 'target' | 'repetitions'> & { batchSize: number; target: EngineBenchmarkDetail; repetitions: EngineRepetition[] };
/** A script benchmark's result: its repetitions are launches. */
export type ScriptBenchmarkResult = Omit<BenchmarkResult, 'target' | 'repetitions'> & { target: ScriptBenchmarkDetail; repetitions: ScriptRepetition[] };

export function isEngineBenchmark(r: BenchmarkResult): r is EngineBenchmarkResult {
  return r.target.kind === 'engine' && r.batchSize !== null && r.repetitions.every((x) => x.target.kind === 'engine');
}
export function isScriptBenchmark(r: BenchmarkResult): r is ScriptBenchmarkResult {
  return r.target.kind === 'script' && r.repetitions.every((x) => x.target.kind === 'script');
}
