import { ApiError } from '@api/errors';
import type { EventData } from '@api/events';
import { apiEvents } from '@api/events';
import { newJobId } from '@api/ids';
import type { JobEvent, JobEventName, JobInfo, JobMethod } from '@api/jobs';
import { isJobEventName, jobIdOfEvent } from '@api/jobs';
import type { MethodParams, ResultFor } from '@api/methods';
import { apiMethods } from '@api/methods';
import { computed, nextTick, ref } from 'vue';

import { errorText } from '../stores/error-text';
import { useJobsStore } from '../stores/jobs';
import { useApiClient } from '../transport/client-instance';
import { unseenEvents } from './job-replay';

/** A listed job's target as the request type ResultFor reads it. */
type TargetOfJob<I extends JobInfo> = I['target'] extends 'script' ? { target: { kind: 'script' } } : object;

/** What a store does with each event of its job, by event name. */
export type JobEventHandlers = { [E in JobEventName]?: (data: EventData<E>) => void };

/**
 * One job as a store follows it (issue 25): started here, or attached to after a
 * reload or from another window. Either way the store sees the job's events
 * through `handlers`, can cancel it, and gets its answer or error at the end.
 */
export function useJob(handlers: JobEventHandlers) {
  const jobId = ref<string | null>(null);
  const running = ref(false);
  const cancelling = ref(false);
  /** The error as the page shows it (code: message), null while running or after success. */
  const error = ref<string | null>(null);
  /** The error itself, for pages that treat a code apart (E_FORBIDDEN, E_CANCELLED). */
  const failure = ref<ApiError | null>(null);
  /** True while this window follows a job it did not start (its request's answer comes through jobs.ended). */
  const attached = ref(false);

  function handle(name: string, data: unknown): void {
    (handlers[name as JobEventName] as ((d: unknown) => void) | undefined)?.(data);
  }

  function follow(id: string, deliver: (name: string, data: unknown) => void = handle): () => void {
    const client = useApiClient();
    const offs = (Object.keys(handlers) as JobEventName[]).map((name) =>
      client.on(name, (data) => {
        if (jobIdOfEvent(name, data) === id) deliver(name, data);
      }),
    );
    return () => offs.forEach((off) => off());
  }

  /** The job's events as listed now, after this window began listening (the info it was handed may be seconds old). */
  async function currentEvents(info: JobInfo): Promise<JobEvent[]> {
    try {
      const jobs = await useApiClient().call('jobs.list', {});
      return jobs.find((j) => j.jobId === info.jobId)?.events ?? info.events;
    } catch {
      return info.events;
    }
  }

  function begin(id: string): void {
    jobId.value = id;
    running.value = true;
    cancelling.value = false;
    error.value = null;
    failure.value = null;
  }

  function fail(err: unknown): null {
    failure.value = err instanceof ApiError ? err : new ApiError('E_INTERNAL', String(err));
    // A person's own cancel is said in words, not as an error code (issue 27): pages show it as a notice.
    error.value = failure.value.code === 'E_CANCELLED' ? failure.value.message : errorText(err);
    return null;
  }
  /** The job ended because someone cancelled it: its `error` is then a notice, not a failure. */
  const cancelled = computed(() => failure.value?.code === 'E_CANCELLED');

  /**
   * Starts `method` as a job and follows it to its end; null when it failed (see error). Its id is a new one,
   * unless the request names it (optimise.resume: the wizard it resumes).
   */
  async function start<M extends JobMethod, P extends MethodParams<M>>(method: M, params: P): Promise<ResultFor<M, P> | null> {
    if (running.value) return null;
    const given = (params as { jobId?: unknown }).jobId;
    const id = typeof given === 'string' ? given : newJobId();
    begin(id);
    const off = follow(id);
    try {
      // The router answers in the form of the request's target (ResultFor); the client checked it against the method's result.
      return (await useApiClient().call(method, { ...params, jobId: id } as MethodParams<M>)) as ResultFor<M, P>;
    } catch (err) {
      return fail(err);
    } finally {
      off();
      running.value = false;
    }
  }

  /**
   * Follows a job started elsewhere: its recorded events, listed anew once this window listens, are replayed
   * (after the page has mounted the views that listen to them), then its live ones, until jobs.ended.
   */
  async function attach<I extends JobInfo>(info: I): Promise<ResultFor<I['method'], TargetOfJob<I>> | null> {
    if (running.value) return null;
    begin(info.jobId);
    attached.value = true;
    cancelling.value = info.cancelling;
    const ended = useJobsStore().whenEnded(info.jobId);
    // Live events wait until the replay is handled, so the job's events reach the store once each and in order.
    let queued: JobEvent[] | null = [];
    const off = follow(info.jobId, (event, data) => (queued ? queued.push({ event, data }) : handle(event, data)));
    try {
      await nextTick();
      await new Promise((resolve) => setTimeout(resolve, 0));
      // Checked as live events are, so the two compare alike below.
      const replay = (await currentEvents(info)).flatMap(({ event, data }) => {
        const parsed = isJobEventName(event) ? apiEvents[event].safeParse(data) : null;
        return parsed?.success ? [{ event, data: parsed.data as unknown }] : [];
      });
      for (const { event, data } of replay) handle(event, data);
      for (const { event, data } of unseenEvents(queued, replay)) handle(event, data);
      queued = null;
      const end = await ended;
      if (!end.ok) return fail(ApiError.fromPayload(end.error ?? { code: 'E_INTERNAL', message: 'the job failed' }));
      const parsed = apiMethods[info.method].result.safeParse(end.result);
      return parsed.success ? (parsed.data as ResultFor<I['method'], TargetOfJob<I>>) : fail(new ApiError('E_INTERNAL', `unexpected result of ${info.method}`));
    } finally {
      off();
      running.value = false;
      attached.value = false;
    }
  }

  /** Stops the job, whoever started it. */
  async function cancel(): Promise<void> {
    if (!jobId.value || !running.value) return;
    cancelling.value = true;
    try {
      await useApiClient().call('jobs.cancel', { jobId: jobId.value });
    } catch (err) {
      error.value = errorText(err);
    }
  }

  return { jobId, running, cancelling, error, failure, cancelled, attached, start, attach, cancel };
}
