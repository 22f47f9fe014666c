import type { JobEndedEvent, JobInfo, JobKind, TargetKind } from '@api/jobs';
import { defineStore } from 'pinia';
import { shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';
import { errorText } from './error-text';

/** Ends kept for jobs that ended before a window asked (a job can end between jobs.list and attaching). */
const KEPT_ENDS = 50;

type Adopter = (info: JobInfo) => void;
type Ended = Pick<JobEndedEvent, 'ok' | 'result' | 'error'>;

/**
 * Every job running in the workbench, whichever window or socket started it
 * (issue 25: a job outlives its page). Area stores adopt the jobs of their kind
 * and target; the status bar lists them all with a Cancel each.
 */
export const useJobsStore = defineStore('jobs', () => {
  const live = shallowRef<JobInfo[]>([]);
  const error = shallowRef<string | null>(null);
  const adopters = new Map<string, Adopter>();
  const ends = new Map<string, Ended>();
  const waiters = new Map<string, ((end: Ended) => void)[]>();
  let stop: (() => void) | null = null;

  const keyOf = (kind: JobKind, target: TargetKind | null) => `${kind}/${target ?? '-'}`;

  function ended(e: Ended & { jobId: string }): void {
    live.value = live.value.filter((j) => j.jobId !== e.jobId);
    ends.set(e.jobId, { ok: e.ok, result: e.result, error: e.error });
    if (ends.size > KEPT_ENDS) ends.delete(ends.keys().next().value as string);
    for (const resolve of waiters.get(e.jobId) ?? []) resolve(e);
    waiters.delete(e.jobId);
  }

  function offer(info: JobInfo): void {
    adopters.get(keyOf(info.kind, info.target))?.(info);
  }

  /** Lists the running jobs and hands each to its area; a job followed here that is gone ended unseen. */
  async function refresh(): Promise<void> {
    try {
      const jobs = await useApiClient().call('jobs.list', {});
      live.value = jobs;
      error.value = null;
      for (const [id] of waiters) {
        if (!jobs.some((j) => j.jobId === id) && !ends.has(id)) {
          ended({ jobId: id, ok: false, error: { code: 'E_DISCONNECTED', message: `job ${id} is no longer running: the workbench was restarted while it ran` } });
        }
      }
      for (const info of jobs) offer(info);
    } catch (err) {
      error.value = errorText(err);
    }
  }

  /** Follows jobs.started / jobs.ended, and lists again after every reconnect. */
  function start(): void {
    if (stop) return;
    const client = useApiClient();
    const offs = [
      client.on('jobs.started', (info) => {
        live.value = [...live.value.filter((j) => j.jobId !== info.jobId), info];
        offer(info);
      }),
      client.on('jobs.ended', (e) => ended(e)),
      client.transport.onState((s) => {
        if (s === 'connected') void refresh();
      }),
    ];
    stop = () => offs.forEach((off) => off());
    void refresh();
  }

  /**
   * An area store takes the jobs of one kind and target: those running now as soon as they are listed again,
   * later ones as they start (a window that started a job itself ignores the offer: it already follows it).
   * A store made after the jobs were listed (its area opened later) gets them listed anew, as they run now;
   * attaching then reads each job's events afresh once it listens (useJob), as the listing's are seconds old.
   */
  function adopt(kind: JobKind, target: TargetKind | null, adopter: Adopter): void {
    adopters.set(keyOf(kind, target), adopter);
    if (live.value.some((info) => info.kind === kind && info.target === target)) void refresh();
  }

  /** Resolves when the job ends (at once if it already has), with its answer or error. */
  function whenEnded(jobId: string): Promise<Ended> {
    const end = ends.get(jobId);
    if (end) return Promise.resolve(end);
    return new Promise((resolve) => waiters.set(jobId, [...(waiters.get(jobId) ?? []), resolve]));
  }

  async function cancel(jobId: string): Promise<void> {
    live.value = live.value.map((j) => (j.jobId === jobId ? { ...j, cancelling: true } : j));
    try {
      await useApiClient().call('jobs.cancel', { jobId });
    } catch (err) {
      error.value = errorText(err);
    }
  }

  function dispose(): void {
    stop?.();
    stop = null;
  }

  return { live, error, start, refresh, adopt, whenEnded, cancel, dispose };
});
