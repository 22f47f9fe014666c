import { z } from 'zod';

import { ApiErrorSchema } from './errors';
import type { EventData, EventName } from './events';
import type { TargetKind } from './target';
import { TargetKindSchema, targetKindOf } from './target';

/**
 * The job model (issue 25): every request that runs for long is a job with one id,
 * listed by jobs.list while it runs, stopped by jobs.cancel, and announced to every
 * window by jobs.started and jobs.ended, so a reload or a second window re-attaches
 * to it instead of leaving it frozen.
 */
export const JobKindSchema = z.enum(['train', 'benchmark', 'batchSize', 'optimise', 'dataset', 'loader']);
export type JobKind = z.infer<typeof JobKindSchema>;

export { TargetKindSchema } from './target';
export type { TargetKind } from './target';

/**
 * The requests that start a job, what each is, and which target it measures ('either': the one its
 * request names, see targetKindOf). Every one names its job by the request's `jobId` (made up by the
 * registry when absent), and every event of a job carries that `jobId`.
 */
export const JOB_METHODS = {
  'train.run': { kind: 'train', target: 'either' },
  'benchmark.training': { kind: 'benchmark', target: 'either' },
  'batchSize.search': { kind: 'batchSize', target: 'either' },
  'optimise.start': { kind: 'optimise', target: 'either' },
  'optimise.resume': { kind: 'optimise', target: 'engine' },
  'datasets.build': { kind: 'dataset', target: null },
  'datasets.benchmark': { kind: 'loader', target: null },
} as const satisfies Record<string, { kind: JobKind; target: TargetKind | 'either' | null }>;
export type JobMethod = keyof typeof JOB_METHODS;
export const JobMethodSchema = z.enum(Object.keys(JOB_METHODS) as [JobMethod, ...JobMethod[]]);

/** The target a job of this method measures, given its request; null for a dataset build. */
export function jobTargetOf(method: JobMethod, request: unknown): TargetKind | null {
  const target = JOB_METHODS[method].target;
  return target === 'either' ? targetKindOf(request) : target;
}

export function isJobMethod(method: string): method is JobMethod {
  return Object.prototype.hasOwnProperty.call(JOB_METHODS, method);
}

/** The events of a job: each names it by its `jobId` field. */
export const JOB_EVENTS = [
  'train.progress',
  'train.preparing',
  'datasets.progress',
  'datasets.benchmarkProgress',
  'batchSize.trial',
  'batchSize.progress',
  'benchmark.progress',
  'optimise.progress',
  'script.output',
  'script.progress',
  'script.optimiseBaseline',
  'script.join',
] as const satisfies readonly EventName[];
export type JobEventName = (typeof JOB_EVENTS)[number];

export function isJobEventName(name: string): name is JobEventName {
  return (JOB_EVENTS as readonly string[]).includes(name);
}

/** The job an event belongs to, or null for an event of no job (telemetry, engine status). */
export function jobIdOfEvent<E extends EventName>(event: E, data: EventData<E>): string | null {
  if (!isJobEventName(event)) return null;
  const id = (data as Record<string, unknown>).jobId;
  return typeof id === 'string' ? id : null;
}

/** One event a job emitted, as recorded for a window that attaches later. */
export const JobEventSchema = z.object({ event: z.string(), data: z.unknown() });
export type JobEvent = z.infer<typeof JobEventSchema>;

/** What names a job and says what it is, in jobs.list, jobs.started and jobs.ended alike. */
const JobIdentitySchema = z.object({
  jobId: z.string(),
  method: JobMethodSchema,
  kind: JobKindSchema,
  target: TargetKindSchema.nullable(),
});

/** A running job as jobs.list and jobs.started describe it. */
export const JobInfoSchema = JobIdentitySchema.extend({
  /** The request as the job received it (ids filled in), so a window can show what runs. */
  request: z.unknown(),
  startedAt: z.string(),
  cancelling: z.boolean(),
  /** Its events so far, oldest first, bounded (the newest of each kind are kept): replayed by a window that attaches. */
  events: z.array(JobEventSchema),
});
export type JobInfo = z.infer<typeof JobInfoSchema>;

/** A job's end, with what its request answered (or the error), for windows that attached to it. */
export const JobEndedEventSchema = JobIdentitySchema.extend({
  ok: z.boolean(),
  result: z.unknown().optional(),
  error: ApiErrorSchema.optional(),
});
export type JobEndedEvent = z.infer<typeof JobEndedEventSchema>;

export const JobCancelParamsSchema = z.object({ jobId: z.string().min(1).max(128) }).strict();
export const JobCancelResultSchema = z.object({ cancelled: z.boolean() });
