// Issue 41, attack round 3, F4: a second job under an id that is live is refused whatever the method, so it
// never runs unlisted, never has its progress kept as the first job's, and jobs.cancel never stops the wrong one.
// Real services through the router, as serve mode and the app use them.
import { describe, expect, it } from 'vitest';

import type { ApiError } from '../../src-main/api/errors';
import { BuildRequestSchema } from '../../src-main/api/datasets';
import type { JobInfo } from '../../src-main/api/jobs';
import type { Services } from '../../src-main/core/services';
import { servicesPerTest } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

/** What a refusal tells a person to do: a resume names the job it goes on with, so it waits; a start takes another id. */
const insteadOf = (method: string) => (method === 'optimise.resume' ? 'wait for it to end, or cancel it first' : 'choose another jobId');

const newServices = servicesPerTest();
const services = (): Promise<Services> => newServices({ allowScripts: true });

const until = async (what: string, ok: () => boolean, ms = 30_000) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

const mlp = { family: 'mlp', input: [1, 28, 28], outputs: 10 };

/** Every method that starts a job, with a request under `jobId` that would run if the id were free. */
const secondJobs = (jobId: string, cwd: string) =>
  [
    ['datasets.build', { source: { kind: 'synthetic-board', records: 64, seed: 1 }, name: 'tiny', jobId }],
    ['datasets.benchmark', { dataset: 'no-such-cache', jobId }],
    ['train.run', { spec: mlp, data: { kind: 'fashion-mnist' }, options: { epochs: 1, maxSteps: 2, batchSize: 16 }, jobId }],
    ['benchmark.training', { target: { kind: 'script', command: ['/bin/sh', '-c', 'true'], cwd }, steps: 1, repeat: 2, jobId }],
    ['batchSize.search', { spec: mlp, data: { kind: 'fashion-mnist' }, jobId }],
    ['optimise.start', { target: { spec: mlp, data: { kind: 'fashion-mnist' } }, jobId }],
    ['optimise.resume', { jobId }],
  ] as const;

describe('a second job under a live id', () => {
  it('is refused for every method, naming the id and the job that holds it; the first stays listed and alone', async () => {
    const s = await services();
    const cwd = tempDir();
    const started: string[] = [];
    const off = s.events.subscribe((event, data) => event === 'jobs.started' && started.push((data as JobInfo).method));
    const target = { kind: 'script', command: ['/bin/sh', '-c', 'sleep 30'], cwd: cwd.dir };
    const first = s.router.dispatch('train.run', { target, jobId: 'live-id' });
    first.catch(() => undefined);
    await until('the first job to run', () => s.running.has('live-id'));
    for (const [method, params] of secondJobs('live-id', cwd.dir)) {
      const err = await s.router.dispatch(method, params).then(
        () => null,
        (e: ApiError) => e,
      );
      expect(err && { code: err.code, message: err.message }, method).toEqual({
        code: 'E_BAD_INPUT',
        message: `a script training run with the id live-id is already running: ${insteadOf(method)}`,
      });
    }
    off();
    expect(started).toEqual(['train.run']);
    expect(s.jobs.list().map((j) => [j.jobId, j.method])).toEqual([['live-id', 'train.run']]);
    // Nothing of a second job was kept as the first one's, and no dataset was built under its id.
    expect(s.jobs.list()[0].events.filter((e) => e.event.startsWith('datasets.'))).toEqual([]);
    expect(await s.router.dispatch('datasets.list', {})).toEqual([]);
    // The one cancel stops the one job.
    expect(await s.router.dispatch('jobs.cancel', { jobId: 'live-id' })).toEqual({ cancelled: true });
    expect(await first.then(() => 'completed', (e: ApiError) => e.code)).toBe('E_CANCELLED');
    expect(s.jobs.list()).toEqual([]);
    expect(s.running.running).toBe(0);
    cwd.cleanup();
  }, 120_000);

  it('is refused while a dataset job (another service\'s) holds the id, from the moment its request is taken', async () => {
    const s = await services();
    const cwd = tempDir();
    const build = s.router.dispatch('datasets.build', { source: { kind: 'synthetic-board', records: 64, seed: 2 }, name: 'held', jobId: 'build-id' });
    // Sent in the same tick: the build is live from its request on, before any of its work.
    const seconds = secondJobs('build-id', cwd.dir)
      .filter(([m]) => m !== 'datasets.build')
      .map(([method, params]) => [method, s.router.dispatch(method, params).then(() => null, (e: ApiError) => ({ code: e.code, message: e.message }))] as const);
    for (const [method, err] of seconds) {
      expect(await err, method).toEqual({ code: 'E_BAD_INPUT', message: `a dataset build with the id build-id is already running: ${insteadOf(method)}` });
    }
    expect(s.running.running).toBe(0);
    expect(await build).toMatchObject({ dataset: { id: expect.stringMatching(/^held-/) } });
    expect(s.jobs.list()).toEqual([]);
    cwd.cleanup();
  }, 120_000);
  it("is refused while a dataset build started inside another job's work holds the id (the re-attack)", async () => {
    const s = await services();
    // As a training run's preparation starts one: not through the router, its id announced in datasets.progress.
    const inner = s.datasets.build(BuildRequestSchema.parse({ source: { kind: 'synthetic-board', records: 20_000, seed: 3 }, name: 'inner', jobId: 'inner-build' }));
    inner.catch(() => undefined);
    const mlp = { family: 'mlp', input: [28, 28], outputs: 10, hidden: [8] };
    const err = await s.router.dispatch('train.run', { spec: mlp, data: { kind: 'fashion-mnist' }, options: { maxSteps: 1 }, jobId: 'inner-build' }).then(
      () => null,
      (e: ApiError) => ({ code: e.code, message: e.message }),
    );
    expect(err).toEqual({ code: 'E_BAD_INPUT', message: 'a dataset job with the id inner-build is already running: choose another jobId' });
    expect(s.jobs.list()).toEqual([]);
    await inner;
  }, 120_000);

  it("cannot take a live job's part in the engine: a client's job named after a benchmark's next repetition leaves it to run (re-attack 10)", async () => {
    const s = await services();
    const progress: { runId: string | null; repetition: number; phase: string }[] = [];
    const off = s.events.subscribe((event, data) => event === 'benchmark.progress' && progress.push(data as (typeof progress)[number]));
    const small = { family: 'mlp', input: [28, 28], outputs: 10, hidden: [8] };
    const bench = s.router.dispatch('benchmark.training', { spec: small, data: { kind: 'fashion-mnist' }, warmupSteps: 0, steps: 300, repeat: 3, jobId: 'bench-held' });
    bench.catch(() => undefined);
    await until('the first repetition to measure', () => progress.some((p) => p.phase === 'measuring' && p.runId));
    const { runId, repetition } = progress.find((p) => p.phase === 'measuring' && p.runId)!;
    // A client reads the run id from the events and names its own training as the repetitions' parts once were.
    const squatters = [repetition + 1, repetition + 2].map((k) => {
      const jobId = `${runId}-rep${k}`;
      const done = s.router.dispatch('train.run', { spec: small, data: { kind: 'fashion-mnist' }, options: { epochs: 1_000, maxSteps: 1_000_000 }, jobId }).then(
        () => 'completed',
        (e: ApiError) => e.code,
      );
      return { jobId, done };
    });
    await until('both squatters to train', () => squatters.every((q) => s.running.has(q.jobId)));
    // The benchmark's repetitions run under ids of their own and end as measured.
    const result = (await bench) as { repetitions: unknown[] };
    expect(result.repetitions).toHaveLength(3);
    for (const q of squatters) {
      expect(await s.router.dispatch('jobs.cancel', { jobId: q.jobId })).toEqual({ cancelled: true });
      expect(await q.done).toBe('E_CANCELLED');
    }
    off();
    expect(s.running.running).toBe(0);
  }, 120_000);

  it("cannot take an engine wizard's repetition in the engine either: clients' jobs named after its next ones leave it to run (re-attack 11)", async () => {
    const s = await services();
    let runId: string | null = null;
    const off = s.events.subscribe((event, data) => {
      const p = data as { jobId?: string; runId?: string | null };
      if (event === 'optimise.progress' && p.jobId === 'wizard-held' && p.runId) runId ??= p.runId;
    });
    const small = { family: 'mlp', input: [28, 28], outputs: 10, hidden: [8] };
    const request = { target: { spec: small, data: { kind: 'fashion-mnist' } }, repeat: 2, warmupSteps: 1, steps: 30, maxTrials: 1, batchSearch: false, jobId: 'wizard-held' };
    const wizard = s.router.dispatch('optimise.start', request);
    wizard.catch(() => undefined);
    await until("the wizard's run", () => runId !== null);
    const squatters = [2, 3, 4].map((k) => {
      const jobId = `${runId}-r${k}`;
      const done = s.router.dispatch('train.run', { spec: small, data: { kind: 'fashion-mnist' }, options: { epochs: 1_000, maxSteps: 1_000_000 }, jobId }).then(
        () => 'completed',
        (e: ApiError) => e.code,
      );
      return { jobId, done };
    });
    expect(await wizard).toMatchObject({ status: 'completed' });
    for (const q of squatters) {
      await until(`${q.jobId} to be cancellable`, () => s.running.has(q.jobId));
      expect(await s.router.dispatch('jobs.cancel', { jobId: q.jobId })).toEqual({ cancelled: true });
      expect(await q.done).toBe('E_CANCELLED');
    }
    off();
    expect(s.running.running).toBe(0);
  }, 180_000);
});
