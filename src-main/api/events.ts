import { z } from 'zod';

import { BatchSearchProgressSchema, BatchTrialEventSchema } from './batch-size';
import { BenchmarkProgressSchema } from './benchmark';
import { BuildProgressSchema, LoaderBenchProgressSchema } from './datasets';
import { JobEndedEventSchema, JobInfoSchema } from './jobs';
import { GpuStateSchema, TelemetrySampleSchema } from './telemetry';
import { OptimiseProgressSchema } from './optimise';
import { ScriptProgressEventSchema } from './train-result';
import { ScriptJoinEventSchema, ScriptOptimiseBaselineEventSchema, ScriptOutputEventSchema } from './script-target';
import { TrainPreparingEventSchema, TrainProgressEventSchema } from './training';

export const EngineStateSchema = z.enum(['starting', 'ready', 'restarting', 'failed', 'stopped']);
export type EngineState = z.infer<typeof EngineStateSchema>;

/** Sent whenever the engine host changes state (a crash, a restart). */
export const EngineStatusEventSchema = z.object({
  state: EngineStateSchema,
  /** Process id of the current host, null while none runs. */
  pid: z.number().int().nullable(),
  /** How many times the host was restarted after a crash. */
  restarts: z.number().int().nonnegative(),
  /** Why the last host died, e.g. "killed by signal SIGABRT while running debug.abort". */
  lastFailure: z.string().nullable(),
});
export type EngineStatusEvent = z.infer<typeof EngineStatusEventSchema>;

/** Every event stream of the contract, by name. */
export const apiEvents = {
  'engine.status': EngineStatusEventSchema,
  'train.progress': TrainProgressEventSchema,
  'datasets.progress': BuildProgressSchema,
  /** The loader benchmark's settings as each starts and ends (its jobId is the request's). */
  'datasets.benchmarkProgress': LoaderBenchProgressSchema,
  'batchSize.trial': BatchTrialEventSchema,
  /** An engine batch-size search before its first trial and as each trial starts and steps (its searchId is the request's). */
  'batchSize.progress': BatchSearchProgressSchema,
  'telemetry.sample': TelemetrySampleSchema,
  'telemetry.gpu': GpuStateSchema,
  'benchmark.progress': BenchmarkProgressSchema,
  'optimise.progress': OptimiseProgressSchema,
  /** A line a script target wrote on its stdout or stderr, live. */
  'script.output': ScriptOutputEventSchema,
  'train.preparing': TrainPreparingEventSchema,
  /** A script run's progress (script.train), at most ~10/s: samples/s, data-wait share and loss since the last one. */
  'script.progress': ScriptProgressEventSchema,
  /** A trial of script.findBatchSize as it finishes (its jobId is the request's). */
  /** A script wizard's baseline, as soon as it is measured (its result comes at the end). */
  'script.optimiseBaseline': ScriptOptimiseBaselineEventSchema,
  /** A script job across machines (a collector asked for): the join code of its other nodes, once. */
  'script.join': ScriptJoinEventSchema,
  /** A job started (from any window, socket or the CLI's services): windows that did not start it may attach. */
  'jobs.started': JobInfoSchema,
  /** A job ended, with its request's answer, for the windows that attached to it. */
  'jobs.ended': JobEndedEventSchema,
} as const;

export type ApiEvents = typeof apiEvents;
export type EventName = keyof ApiEvents;
export type EventData<E extends EventName> = z.infer<ApiEvents[E]>;


export function isEventName(name: string): name is EventName {
  return Object.prototype.hasOwnProperty.call(apiEvents, name);
}
