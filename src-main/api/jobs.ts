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
 * The requests that start a job, what each is, which target it measures ('either': the one its request
 * names, see targetKindOf), and the request field that holds the job's id. The script.* methods are the
 * old names of the either-target ones, kept for one release.
 */
export const JOB_METHODS = {
  'train.run': { kind: 'train', target: 'either', idParam: 'runId' },
  'script.train': { kind: 'train', target: 'script', idParam: 'runId' },
  'benchmark.training': { kind: 'benchmark', target: 'either', idParam: 'jobId' },
  'script.benchmark': { kind: 'benchmark', target: 'script', idParam: 'jobId' },
  'batchSize.search': { kind: 'batchSize', target: 'either', idParam: 'searchId' },
  'script.findBatchSize': { kind: 'batchSize', target: 'script', idParam: 'jobId' },
  'optimise.start': { kind: 'optimise', target: 'either', idParam: 'optimiseId' },
  'optimise.resume': { kind: 'optimise', target: 'engine', idParam: 'optimiseId' },
  'script.optimise': { kind: 'optimise', target: 'script', idParam: 'jobId' },
  'datasets.build': { kind: 'dataset', target: null, idParam: 'jobId' },
  'datasets.benchmark': { kind: 'loader', target: null, idParam: 'jobId' },
} as const satisfies Record<string, { kind: JobKind; target: TargetKind | 'either' | null; idParam: string }>;
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

/** The field of each job event that names its job (for a script run's output, the run id is the job id). */
export const JOB_EVENT_IDS = {
  'train.progress': 'runId',
  'train.preparing': 'runId',
  'datasets.progress': 'jobId',
  'datasets.benchmarkProgress': 'jobId',
  'batchSize.trial': 'searchId',
  'batchSize.progress': 'searchId',
  'benchmark.progress': 'jobId',
  'optimise.progress': 'optimiseId',
  'script.output': 'jobId',
  'script.progress': 'runId',
  'script.batchTrial': 'jobId',
  'script.optimiseBaseline': 'jobId',
} as const satisfies Partial<Record<EventName, string>>;
export type JobEventName = keyof typeof JOB_EVENT_IDS;

export function isJobEventName(name: string): name is JobEventName {
  return Object.prototype.hasOwnProperty.call(JOB_EVENT_IDS, name);
}

/** The job an event belongs to, or null for an event of no job (telemetry, engine status). */
export function jobIdOfEvent<E extends EventName>(event: E, data: EventData<E>): string | null {
  if (!isJobEventName(event)) return null;
  const id = (data as Record<string, unknown>)[JOB_EVENT_IDS[event]];
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
