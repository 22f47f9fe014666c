// Issue 41, attack round 3: F2 (a cancel as a job starts is honoured or reported not taken, never lost) and
// F4 (a live id is refused whatever the method), at the registry, over the real in-process jobs table.
import { describe, expect, it } from 'vitest';

import type { EventData, EventName } from '../../src-main/api/events';
import type { JobInfo, JobMethod } from '../../src-main/api/jobs';
import { JOB_METHODS } from '../../src-main/api/jobs';
import { ApiError } from '../../src-main/api/errors';
import { EventHub } from '../../src-main/core/common/event-hub';
import { JobRegistry } from '../../src-main/core/jobs/job-registry';
import { RunningJobs } from '../../src-main/core/jobs/running-jobs';

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((res) => (resolve = res));
  return { promise, resolve };
}

function setup() {
  const hub = new EventHub();
  const seen: { event: EventName; data: unknown }[] = [];
  hub.subscribe((event, data) => seen.push({ event, data }));
  const running = new RunningJobs();
  let n = 0;
  const jobs = new JobRegistry(hub, () => `job-${++n}`, () => new Date('2026-12-02T04:00:00Z'), (id) => running.refuseTaken(id));
  return { hub, seen, running, jobs };
}

/**
 * A service as the real ones are: it opens its job before its first await, ends E_CANCELLED when a cancel
 * reached the job, and otherwise runs until `release`.
 */
function service(running: RunningJobs, release: Promise<void>) {
  return async (request: { jobId?: string }): Promise<string> => {
    const job = running.open(request.jobId, 'an optimisation with the id');
    try {
      await release;
      if (job.cancelled) throw new ApiError('E_CANCELLED', `optimisation ${job.id} was cancelled`);
      return 'ran to its end';
    } finally {
      running.close(job);
    }
  };
}

const outcome = (p: Promise<unknown>) =>
  p.then(
    (v) => String(v),
    (e: ApiError) => e.code,
  );

describe('F2: a cancel as a job starts', () => {
  it('a cancel sent on hearing jobs.started reaches the job its service opened, and the job ends cancelled', async () => {
    const { hub, running, jobs } = setup();
    const release = deferred<void>();
    let answer: Promise<{ cancelled: boolean }> | undefined;
    hub.subscribe((event, data) => {
      if (event === 'jobs.started') answer = jobs.cancel((data as JobInfo).jobId);
    });
    const job = jobs.run('optimise.start', { jobId: 'w' }, (id) => running.cancel(id), service(running, release.promise));
    expect(await answer).toEqual({ cancelled: true });
    expect(jobs.list()[0].cancelling).toBe(true);
    release.resolve();
    expect(await outcome(job)).toBe('E_CANCELLED');
    expect(jobs.list()).toEqual([]);
  });

  it('a cancel its service does not take is answered false and leaves the job offering its Cancel', async () => {
    const { jobs } = setup();
    const release = deferred<number>();
    let takes = false;
    const job = jobs.run('optimise.resume', { jobId: 'r' }, () => ({ cancelled: takes }), () => release.promise);
    expect(await jobs.cancel('r')).toEqual({ cancelled: false });
    expect(jobs.list()[0].cancelling).toBe(false);
    // A cancel that throws is not taken either.
    const failing = jobs.run('optimise.start', { jobId: 't' }, () => Promise.reject(new Error('no such process')), () => release.promise);
    await expect(jobs.cancel('t')).rejects.toThrow('no such process');
    expect(jobs.list().find((j) => j.jobId === 't')?.cancelling).toBe(false);
    // The next one, taken, shows it cancelling; a later one not taken does not undo that.
    takes = true;
    expect(await jobs.cancel('r')).toEqual({ cancelled: true });
    takes = false;
    expect(await jobs.cancel('r')).toEqual({ cancelled: false });
    expect(jobs.list().find((j) => j.jobId === 'r')?.cancelling).toBe(true);
    release.resolve(1);
    await Promise.all([job, failing]);
  });

  it('shows the job cancelling while its service takes a slow cancel', async () => {
    const { jobs } = setup();
    const release = deferred<number>();
    const stopped = deferred<{ cancelled: boolean }>();
    const job = jobs.run('train.run', { jobId: 's' }, () => stopped.promise, () => release.promise);
    const answer = jobs.cancel('s');
    expect(jobs.list()[0].cancelling).toBe(true);
    stopped.resolve({ cancelled: true });
    expect(await answer).toEqual({ cancelled: true });
    expect(jobs.list()[0].cancelling).toBe(true);
    release.resolve(1);
    await job;
  });
});

/** What a refusal tells a person to do: a resume names the job it goes on with, so it waits; a start takes another id. */
const insteadOf = (method: string) => (method === 'optimise.resume' ? 'wait for it to end, or cancel it first' : 'choose another jobId');

describe('F4: one id, one job, whatever the methods', () => {
  const methods = Object.keys(JOB_METHODS) as JobMethod[];

  it('refuses a second job under a live id for every method, naming the id and its holder, without running it', async () => {
    const { hub, seen, running, jobs } = setup();
    const release = deferred<void>();
    const first = jobs.run('train.run', { target: { kind: 'script' }, jobId: 'same' }, (id) => running.cancel(id), service(running, release.promise));
    for (const method of methods) {
      let ran = false;
      const err = await outcome(
        jobs.run(method, { jobId: 'same' }, () => ({ cancelled: true }), async () => ((ran = true), 'second')),
      );
      expect(err, method).toBe('E_BAD_INPUT');
      expect(ran, method).toBe(false);
      const message = await jobs.run(method, { jobId: 'same' }, () => ({ cancelled: true }), async () => 'second').catch((e: ApiError) => e.message);
      expect(message).toBe(`a script training run with the id same is already running: ${insteadOf(method)}`);
    }
    // The first job alone is listed and announced; the events under the id are its own.
    expect(jobs.list().map((j) => [j.jobId, j.method])).toEqual([['same', 'train.run']]);
    expect(seen.filter((e) => e.event === 'jobs.started')).toHaveLength(1);
    hub.emit('script.progress', { jobId: 'same' } as EventData<'script.progress'>);
    expect(jobs.list()[0].events).toHaveLength(1);
    // Its cancel reaches it, and it ends cancelled.
    expect(await jobs.cancel('same')).toEqual({ cancelled: true });
    release.resolve();
    expect(await outcome(first)).toBe('E_CANCELLED');
    // Its id is free again once it ended.
    expect(await jobs.run('datasets.build', { jobId: 'same' }, () => ({ cancelled: true }), async () => 'built')).toBe('built');
  });

  it('refuses an id a job started in-process holds (the CLI, a wizard\'s own search), naming that job', async () => {
    const { seen, running, jobs } = setup();
    const inner = running.open('w-batch-search', 'a batch-size search with the id');
    for (const method of methods) {
      const err = await jobs.run(method, { jobId: 'w-batch-search' }, () => ({ cancelled: true }), async () => 'second').catch((e: ApiError) => e);
      expect(err, method).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe('E_BAD_INPUT');
      expect((err as ApiError).message).toBe('a batch-size search with the id w-batch-search is already running: choose another jobId');
    }
    expect(jobs.list()).toEqual([]);
    expect(seen).toEqual([]);
    running.close(inner);
  });
});
