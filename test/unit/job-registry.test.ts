import { describe, expect, it } from 'vitest';

import type { EventData, EventName } from '../../src-main/api/events';
import { ApiError } from '../../src-main/api/errors';
import { EventHub } from '../../src-main/core/common/event-hub';
import { JobRegistry } from '../../src-main/core/jobs/job-registry';

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

function setup() {
  const hub = new EventHub();
  const seen: { event: EventName; data: unknown }[] = [];
  hub.subscribe((event, data) => seen.push({ event, data }));
  let n = 0;
  const jobs = new JobRegistry(hub, () => `job-${++n}`, () => new Date('2026-11-27T04:00:00Z'));
  const emit = <E extends EventName>(event: E, data: EventData<E>) => hub.emit(event, data);
  return { hub, seen, jobs, emit };
}

const step = (jobId: string, globalStep: number) =>
  ({ jobId, event: { type: 'step', globalStep } }) as unknown as EventData<'train.progress'>;

describe('job registry', () => {
  it('lists a running job with its request and events, announces its start and end, and forgets it when it ends', async () => {
    const { jobs, seen, emit } = setup();
    const work = deferred<{ steps: number }>();
    const running = jobs.run('train.run', { spec: 'x', jobId: 'r1' }, () => ({ cancelled: true }), () => work.promise);
    emit('train.progress', step('r1', 1));
    emit('train.progress', step('other-run', 1));
    emit('train.progress', step('r1', 2));
    const [info] = jobs.list();
    expect(info).toMatchObject({ jobId: 'r1', method: 'train.run', kind: 'train', target: 'engine', request: { spec: 'x', jobId: 'r1' }, startedAt: '2026-11-27T04:00:00.000Z' });
    expect(info.events.map((e) => (e.data as { event: { globalStep: number } }).event.globalStep)).toEqual([1, 2]);
    expect(seen[0]).toMatchObject({ event: 'jobs.started', data: { jobId: 'r1', events: [] } });
    work.resolve({ steps: 2 });
    await expect(running).resolves.toEqual({ steps: 2 });
    expect(jobs.list()).toEqual([]);
    expect(seen.at(-1)).toEqual({ event: 'jobs.ended', data: { jobId: 'r1', method: 'train.run', kind: 'train', target: 'engine', ok: true, result: { steps: 2 } } });
  });

  it('writes a new id into a request that has none, so the work emits under the id it is listed with', async () => {
    const { jobs } = setup();
    let given: unknown;
    await jobs.run('benchmark.training', { target: { kind: 'script', command: ['python3'] } }, () => ({ cancelled: false }), (r) => ((given = r), Promise.resolve(1)));
    expect(given).toEqual({ target: { kind: 'script', command: ['python3'] }, jobId: 'job-1' });
  });

  it('refuses a second request under a running id itself, naming the job that holds it; the first stays listed', async () => {
    const { jobs, seen } = setup();
    const work = deferred<number>();
    void jobs.run('benchmark.training', { jobId: 'b' }, () => ({ cancelled: true }), () => work.promise);
    let ran = false;
    await expect(jobs.run('train.run', { jobId: 'b' }, () => ({ cancelled: true }), () => ((ran = true), Promise.resolve(2)))).rejects.toMatchObject({
      code: 'E_BAD_INPUT',
      message: 'a benchmark with the id b is already running: choose another jobId',
    });
    expect(ran).toBe(false);
    expect(jobs.list().map((j) => j.jobId)).toEqual(['b']);
    expect(seen.filter((e) => e.event.startsWith('jobs.'))).toHaveLength(1);
    work.resolve(1);
  });

  it('cancels through the job’s own cancel, marks it cancelling, and sends its error to attached windows', async () => {
    const { jobs, seen } = setup();
    const work = deferred<number>();
    const asked: string[] = [];
    const running = jobs.run('optimise.start', { jobId: 'w' }, (id) => {
      asked.push(id);
      work.reject(new ApiError('E_CANCELLED', 'wizard w was cancelled'));
      return { cancelled: true };
    }, () => work.promise);
    expect(await jobs.cancel('nope')).toEqual({ cancelled: false });
    expect(await jobs.cancel('w')).toEqual({ cancelled: true });
    expect(asked).toEqual(['w']);
    await expect(running).rejects.toMatchObject({ code: 'E_CANCELLED' });
    expect(seen.at(-1)).toMatchObject({ event: 'jobs.ended', data: { jobId: 'w', ok: false, error: { code: 'E_CANCELLED', message: 'wizard w was cancelled' } } });
    expect(jobs.running).toBe(0);
  });

  it('keeps a bounded tail of a long job’s events, oldest first across event names', async () => {
    const { jobs, emit } = setup();
    const work = deferred<number>();
    void jobs.run('train.run', { target: { kind: 'script' }, jobId: 's' }, () => ({ cancelled: true }), () => work.promise);
    for (let i = 0; i < 5000; i++) emit('script.output', { jobId: 's', runId: 's', stream: 'stdout', repetition: 0, line: `line ${i}` } as EventData<'script.output'>);
    emit('script.progress', { jobId: 's' } as EventData<'script.progress'>);
    const { events } = jobs.list()[0];
    const lines = events.filter((e) => e.event === 'script.output').map((e) => (e.data as { line: string }).line);
    expect(lines).toHaveLength(300);
    expect(lines[0]).toBe('line 4700');
    expect(lines.at(-1)).toBe('line 4999');
    expect(events.at(-1)?.event).toBe('script.progress');
    work.resolve(0);
  });
});
