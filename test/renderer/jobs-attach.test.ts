// @vitest-environment happy-dom
// A job outlives its page: a window that opens while a run trains lists it, re-attaches, replays and follows it, and can cancel it.
import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';

import { useJobsStore } from '../../src-renderer/stores/jobs';
import { useLiveRunStore } from '../../src-renderer/stores/live-run';
import { installFakeClient, ok } from './fake-client';

beforeEach(() => setActivePinia(createPinia()));

const step = (globalStep: number) => ({
  type: 'step', epoch: 0, epochs: 1, step: globalStep, stepsPerEpoch: 500, globalStep, totalSteps: 500, loss: 2 - globalStep / 100, accuracy: null,
  lr: 0.01, gradNorm: 1, samplesPerSec: 1000, phasesMs: { data: 1, h2d: 0, forward: 2, loss: 0.5, backward: 3, optimizer: 1 },
});
const trainJob = (events: unknown[]) => ({
  jobId: '20261127-040000-abcdef', method: 'train.run', kind: 'train', target: 'engine',
  request: { jobId: '20261127-040000-abcdef', options: { device: 'cpu' } }, startedAt: '2026-11-27T04:00:00.000Z', cancelling: false,
  events: events.map((event) => ({ event: 'train.progress', data: { jobId: '20261127-040000-abcdef', event } })),
});
const telemetry = { samples: [], gpu: { status: 'unavailable', message: 'no NVIDIA GPU found', restarts: 0 }, leaseId: 'l1' };

/** The jobs store lists the one running job; then the Runs area's store is made (it adopts it), with the steps it hands on. */
async function listedAndOpened() {
  const jobs = useJobsStore();
  jobs.start();
  await expect.poll(() => jobs.live.length).toBe(1);
  const live = useLiveRunStore();
  const seen: number[] = [];
  live.onStep((e) => seen.push(e.globalStep));
  return { jobs, live, seen };
}

describe('a job that outlives its page', () => {
  it('is re-attached after a reload: its steps so far are replayed, live ones follow, Cancel reaches it, and its end arrives', async () => {
    const fake = installFakeClient((m) => {
      if (m === 'jobs.list') return ok([trainJob([step(1), step(2), step(63)])]);
      if (m === 'telemetry.subscribe') return ok(telemetry);
      if (m === 'jobs.cancel') return ok({ cancelled: true });
      return ok({});
    });
    const { jobs, live, seen } = await listedAndOpened();
    await expect.poll(() => live.running).toBe(true);
    await expect.poll(() => live.last?.globalStep).toBe(63);
    expect(seen).toEqual([1, 2, 63]);
    expect(live.attached).toBe(true);
    fake.emit('train.progress', { jobId: 'someone-else', event: step(99) });
    fake.emit('train.progress', { jobId: '20261127-040000-abcdef', event: step(64) });
    expect(seen).toEqual([1, 2, 63, 64]);
    await live.cancel();
    expect(fake.calls.find((c) => c.method === 'jobs.cancel')?.params).toEqual({ jobId: '20261127-040000-abcdef' });
    expect(live.cancelling).toBe(true);
    fake.emit('jobs.ended', {
      jobId: '20261127-040000-abcdef', method: 'train.run', kind: 'train', target: 'engine', ok: false,
      error: { code: 'E_CANCELLED', message: 'run 20261127-040000-abcdef was cancelled at step 64' },
    });
    await expect.poll(() => live.running).toBe(false);
    expect(live.error).toBe('run 20261127-040000-abcdef was cancelled at step 64');
    expect(live.cancelled).toBe(true);
    expect(jobs.live).toEqual([]);
  });

  it('follows a script run started in another window from its jobs.started, and gives up on it when a reconnect no longer lists it', async () => {
    let listed: unknown[] = [];
    const fake = installFakeClient((m) => (m === 'jobs.list' ? ok(listed) : ok({})));
    const jobs = useJobsStore();
    jobs.start();
    const run = useLiveRunStore().script;
    await expect.poll(() => fake.calls.some((c) => c.method === 'jobs.list')).toBe(true);
    const info = { jobId: 's1', method: 'train.run', kind: 'train', target: 'script', request: { jobId: 's1' }, startedAt: '2026-11-27T04:00:00.000Z', cancelling: false, events: [] };
    fake.emit('jobs.started', info);
    await expect.poll(() => run.running).toBe(true);
    fake.emit('script.output', { jobId: 's1', runId: 's1', stream: 'stdout', repetition: 1, line: 'epoch 1' });
    await expect.poll(() => run.output.map((l) => l.line)).toEqual(['epoch 1']);
    listed = [];
    await jobs.refresh();
    await expect.poll(() => run.running).toBe(false);
    expect(run.error).toMatch(/^disconnected: job s1 is no longer running/);
  });

  it('does not take over a job this window started itself', async () => {
    let finish!: () => void;
    const fake = installFakeClient(async (m) => {
      if (m === 'telemetry.subscribe') return ok(telemetry);
      if (m === 'train.run') {
        await new Promise<void>((r) => (finish = r));
        return ok(null);
      }
      return ok(m === 'jobs.list' ? [] : {});
    });
    useJobsStore().start();
    const live = useLiveRunStore();
    const done = live.start({ spec: { family: 'mlp', input: [4], outputs: 2 }, data: { kind: 'fashion-mnist' }, options: { device: 'cpu' } } as never);
    await expect.poll(() => fake.calls.some((c) => c.method === 'train.run')).toBe(true);
    const id = (fake.calls.find((c) => c.method === 'train.run')!.params as { jobId: string }).jobId;
    fake.emit('jobs.started', { ...trainJob([]), jobId: id, request: { jobId: id } });
    expect(live.attached).toBe(false);
    finish();
    await done;
  });
  it('misses no step and repeats no line when the job goes on while the window reads its replay (the list it was handed is seconds old)', async () => {
    // Each listing after the first finds the job two steps further: one step emitted before the list is read (heard live
    // and listed), one after (heard live only). A window that replayed the listing it was handed skipped the steps between.
    const id = '20261127-040000-abcdef';
    const listed: number[] = [1, 2];
    let fake!: ReturnType<typeof installFakeClient>;
    const advance = (kind: 'engine' | 'script') => {
      const n = listed.length + 1;
      listed.push(n);
      if (kind === 'engine') fake.emit('train.progress', { jobId: id, event: step(n) });
      else fake.emit('script.output', { jobId: id, runId: id, stream: 'stdout', repetition: 1, line: `line ${n}` });
    };
    const jobOf = (kind: 'engine' | 'script') =>
      kind === 'engine'
        ? trainJob(listed.map(step))
        : { ...trainJob([]), target: 'script', events: listed.map((n) => ({ event: 'script.output', data: { jobId: id, runId: id, stream: 'stdout', repetition: 1, line: `line ${n}` } })) };
    for (const kind of ['engine', 'script'] as const) {
      setActivePinia(createPinia());
      listed.splice(0, listed.length, 1, 2);
      let lists = 0;
      fake = installFakeClient((m) => {
        if (m === 'telemetry.subscribe') return ok(telemetry);
        if (m !== 'jobs.list') return ok({});
        if (lists++ > 0) advance(kind);
        const job = jobOf(kind);
        if (lists > 1) advance(kind);
        return ok([job]);
      });
      const { live, seen } = await listedAndOpened();
      const followed = kind === 'engine' ? live : live.script;
      await expect.poll(() => followed.attached).toBe(true);
      await expect.poll(() => fake.calls.filter((c) => c.method === 'jobs.list').length).toBeGreaterThanOrEqual(3);
      advance(kind);
      const all = Array.from({ length: listed.length }, (_, i) => i + 1);
      if (kind === 'engine') await expect.poll(() => seen).toEqual(all);
      else await expect.poll(() => live.script.output.map((l) => l.line)).toEqual(all.map((n) => `line ${n}`));
    }
  });
});
