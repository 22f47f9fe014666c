// @vitest-environment happy-dom
// The Runs area's stores over a real ApiClient whose answers the test decides (the contract checks still run).
import { createPinia, setActivePinia } from 'pinia';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { ModelSpecSchema } from '../../src-main/api/model-spec';
import { TrainRequestSchema } from '../../src-main/api/training';
import { useLiveRunStore } from '../../src-renderer/stores/live-run';
import { LIVE_DETAIL_MS, LIVE_REFRESH_MS, RUN_FILTERS, useRunsStore } from '../../src-renderer/stores/runs';
import { fail, installFakeClient, ok } from './fake-client';

beforeEach(() => setActivePinia(createPinia()));

const summary = (id: string) => ({
  id, kind: 'train', status: 'completed', createdAt: '2026-11-24T10:00:00.000Z', finishedAt: null, title: `mlp ${id}`, testAccuracy: 0.8,
  samplesPerSec: 1000, gpuUtilizationMean: null, error: null, lastStep: null, interruption: null, problem: null,
});
const detail = (id: string) => ({ summary: summary(id), record: { config: { options: { batchSize: 64 } } }, events: [] });

describe('runs store', () => {
  it('compares the picked runs in the order they were picked, and refuses fewer than two', async () => {
    const fake = installFakeClient((m, p) => (m === 'runs.get' ? ok(detail((p as { id: string }).id)) : ok([])));
    const store = useRunsStore();
    store.togglePick('run-a');
    await store.compare();
    expect(store.error).toBe('pick at least two runs to compare (1 picked)');
    expect(fake.calls).toEqual([]);
    store.togglePick('run-c');
    store.togglePick('run-b');
    store.togglePick('run-c'); // unticked again
    store.togglePick('run-c');
    await store.compare();
    expect(store.error).toBeNull();
    expect(store.compared.map((r) => r.summary.id)).toEqual(['run-a', 'run-b', 'run-c']);
    // An older server without telemetry in runs.get still reads: the contract's default fills it.
    expect(store.compared[0].telemetry).toEqual([]);
    store.closeCompare();
    expect(store.compared).toEqual([]);
  });

  it('says why a compared run cannot be loaded', async () => {
    installFakeClient((m, p) => ((p as { id: string }).id === 'gone' ? fail('E_BAD_INPUT', 'there is no run gone in the workspace /w') : ok(detail('x'))));
    const store = useRunsStore();
    store.togglePick('x');
    store.togglePick('gone');
    await store.compare();
    expect(store.error).toBe('there is no run gone in the workspace /w');
  });

  it('lists the models, and names the failure when the list cannot be had', async () => {
    const models = [
      { name: 'mlp', source: 'builtin', family: 'mlp', problem: null },
      { name: 'models/x.json', source: 'workspace', family: 'cnn', problem: 'model spec models/x.json is invalid: spec.kernel: kernel must be odd' },
    ];
    installFakeClient(() => ok(models));
    const store = useRunsStore();
    await store.loadModels();
    expect(store.models).toEqual(models);
    installFakeClient(() => fail('E_INTERNAL', 'disk gone'));
    await store.loadModels();
    expect(store.error).toBe("cannot list the workspace's model spec files: unexpected error: disk gone");
  });
});

describe('runs list: filter, annotations, live refresh', () => {
  const run = (id: string, kind: string, extra: Record<string, unknown> = {}) => ({ ...summary(id), kind, ...extra });
  const annotation = (name: string, tags: string[], notes = '') => ({ name, tags, notes, updatedAt: '2026-11-27T10:00:00.000Z' });
  const runs = [
    run('t1', 'train', { target: 'engine', annotation: annotation('baseline', ['fast']) }),
    run('t2', 'train', { target: 'script' }),
    run('b1', 'benchmark', { target: 'script', annotation: annotation('', ['amp'], 'tried bf16') }),
    run('s1', 'batch-search'),
    run('o1', 'optimise'),
    run('l1', 'loader-benchmark'),
  ];

  it('shows the runs of the kind chosen, a script run under its kind and under script, and finds by name, tag, notes or id', async () => {
    installFakeClient(() => ok(runs));
    const store = useRunsStore();
    await store.refresh();
    const ids = () => store.shown.map((r) => r.id);
    const expected: Record<(typeof RUN_FILTERS)[number]['key'], string[]> = {
      all: ['t1', 't2', 'b1', 's1', 'o1', 'l1'], training: ['t1', 't2'], benchmark: ['b1'], 'batch-search': ['s1'], optimise: ['o1'], loader: ['l1'], script: ['t2', 'b1'],
    };
    for (const f of RUN_FILTERS) {
      store.filter = f.key;
      expect(ids(), f.key).toEqual(expected[f.key]);
      expect(store.counts[f.key]).toBe(expected[f.key].length);
    }
    store.filter = 'all';
    for (const [text, found] of [['BASE', ['t1']], ['amp', ['b1']], ['bf16', ['b1']], ['l1', ['l1']], ['  ', expected.all]] as const) {
      store.search = text;
      expect(ids(), text).toEqual(found);
    }
    store.filter = 'training';
    store.search = 'amp';
    expect(ids()).toEqual([]);
  });

  it('stores an annotation and shows it in the list and the open run at once; a refusal is kept for the editor', async () => {
    const fake = installFakeClient((m, p) => {
      if (m === 'runs.list') return ok(runs);
      if (m === 'runs.get') return ok(detail((p as { id: string }).id));
      if (m === 'runs.annotate') {
        const q = p as { name?: string };
        if (q.name === 'x'.repeat(200)) return fail('E_BAD_REQUEST', "bad request to runs.annotate: params.name: a run's name is at most 120 characters");
        return ok({ name: q.name ?? '', tags: ['new'], notes: '', updatedAt: '2026-11-27T11:00:00.000Z' });
      }
      return ok({});
    });
    const store = useRunsStore();
    await store.refresh();
    await store.open('t2');
    expect(await store.annotate('t2', { name: 'renamed', tags: ['new'] })).toBe(true);
    expect(fake.calls.at(-1)).toEqual({ method: 'runs.annotate', params: { id: 't2', name: 'renamed', tags: ['new'] } });
    expect(store.list.find((r) => r.id === 't2')?.annotation?.name).toBe('renamed');
    expect(store.selected?.summary.annotation?.tags).toEqual(['new']);
    expect(store.annotateError).toBeNull();
    expect(await store.annotate('t2', { name: 'x'.repeat(200) })).toBe(false);
    expect(store.annotateError).toMatch(/^(?!E_).*at most 120 characters/);
    expect(store.list.find((r) => r.id === 't2')?.annotation?.name).toBe('renamed');
  });

  describe('following jobs', () => {
    beforeEach(() => vi.useFakeTimers());
    afterEach(() => vi.useRealTimers());
    const progress = (jobId: string) => ({ jobId, event: { type: 'epoch', epoch: 1, epochs: 1, seconds: 1, trainLoss: 1, trainAccuracy: null } });
    const job = { jobId: 'j1', method: 'train.run', kind: 'train', target: 'engine' };

    it('lists again on a job start, at most once per interval while it reports progress, and once more at its end; the open running run is read again', async () => {
      let status = 'running';
      const fake = installFakeClient((m, p) => {
        if (m === 'runs.list') return ok([run('j1', 'train', { status })]);
        if (m === 'runs.get') return ok({ ...detail((p as { id: string }).id), summary: run('j1', 'train', { status }) });
        return ok({});
      });
      const count = (method: string) => fake.calls.filter((c) => c.method === method).length;
      const store = useRunsStore();
      const stop = store.follow();
      fake.emit('jobs.started', { ...job, request: {}, startedAt: '2026-11-27T10:00:00.000Z', cancelling: false, events: [] });
      await vi.advanceTimersByTimeAsync(0);
      expect(count('runs.list')).toBe(1); // the first refresh comes at once
      await store.open('j1');
      for (let i = 0; i < 50; i++) {
        fake.emit('train.progress', progress('j1'));
        await vi.advanceTimersByTimeAsync(100); // 20 events a second for 5 s
      }
      // 5 s of progress: one refresh per LIVE_REFRESH_MS, not one per event.
      expect(count('runs.list')).toBeLessThanOrEqual(1 + Math.ceil(5000 / LIVE_REFRESH_MS));
      expect(count('runs.list')).toBeGreaterThanOrEqual(3);
      // The open run is running: read again, but only every LIVE_DETAIL_MS (runs.get reads its whole events file).
      expect(count('runs.get')).toBe(1); // opened 5 s ago: not yet read again
      await vi.advanceTimersByTimeAsync(LIVE_DETAIL_MS);
      fake.emit('train.progress', progress('j1'));
      await vi.advanceTimersByTimeAsync(LIVE_REFRESH_MS);
      expect(count('runs.get')).toBe(2);
      status = 'completed';
      fake.emit('jobs.ended', { ...job, ok: true });
      await vi.advanceTimersByTimeAsync(LIVE_REFRESH_MS);
      expect(store.list[0].status).toBe('completed');
      expect(store.selected?.summary.status).toBe('completed');
      const listed = count('runs.list');
      await vi.advanceTimersByTimeAsync(10 * LIVE_REFRESH_MS);
      expect(count('runs.list')).toBe(listed); // no job, no events: no polling
      stop();
      fake.emit('train.progress', progress('j1'));
      await vi.advanceTimersByTimeAsync(10 * LIVE_REFRESH_MS);
      expect(count('runs.list')).toBe(listed); // stopped following
    });

    it("opens a job's run from its own list when a live refresh overlaps it, and an older read of the run never replaces a newer one", async () => {
      // Answers held until the test releases them, to order them as a loaded machine may.
      const held: { method: string; release: () => void }[] = [];
      let status = 'running';
      installFakeClient(async (m, p) => {
        const answer = m === 'runs.list' ? [run('j1', 'train', { status })] : m === 'runs.get' ? { ...detail((p as { id: string }).id), summary: run('j1', 'train', { status }) } : {};
        if (m === 'runs.list' || m === 'runs.get') await new Promise<void>((release) => held.push({ method: m, release }));
        return ok(answer);
      });
      const store = useRunsStore();
      // A live refresh reads the run while it runs; its answer is still on its way when the job ends.
      const staleRead = store.open('j1');
      status = 'cancelled';
      const ended = store.showEnded('j1');
      const live = store.refresh(); // the job's end asks the live refresh for one more list
      await vi.advanceTimersByTimeAsync(0);
      expect(held.map((h) => h.method)).toEqual(['runs.get', 'runs.list', 'runs.list']);
      held[1].release(); // showEnded's list: not shown (a newer list is in flight), but it decides
      await vi.advanceTimersByTimeAsync(0);
      expect(held.map((h) => h.method)).toEqual(['runs.get', 'runs.list', 'runs.list', 'runs.get']);
      held[3].release(); // the run as it ended
      await vi.advanceTimersByTimeAsync(0);
      held[0].release(); // the read from while it ran arrives last
      held[2].release();
      await Promise.all([staleRead, ended, live]);
      expect(store.selected?.summary.status).toBe('cancelled');
      expect(store.list[0].status).toBe('cancelled');
      expect(store.error).toBeNull();
    });

    it('keeps the run a person clicked while a live refresh finds the one shown before has changed', async () => {
      const held: { method: string; release: () => void }[] = [];
      let statusA = 'running';
      const fake = installFakeClient(async (m, p) => {
        const id = (p as { id?: string }).id;
        const answer = m === 'runs.list' ? [run('a', 'train', { status: statusA }), run('b', 'train')] : { ...detail(id!), summary: run(id!, 'train', id === 'a' ? { status: statusA } : {}) };
        await new Promise<void>((release) => held.push({ method: `${m} ${id ?? ''}`.trim(), release }));
        return ok(answer);
      });
      const store = useRunsStore();
      const first = store.open('a');
      await vi.advanceTimersByTimeAsync(0);
      held[0].release();
      await first;
      const stop = store.follow();
      statusA = 'completed'; // a's job ends: a live refresh comes
      fake.emit('jobs.ended', { ...job, jobId: 'a', ok: true });
      await vi.advanceTimersByTimeAsync(LIVE_REFRESH_MS);
      const click = store.open('b'); // the person clicks b meanwhile
      await vi.advanceTimersByTimeAsync(0);
      expect(held.map((h) => h.method)).toEqual(['runs.get a', 'runs.list', 'runs.get b']);
      held[1].release(); // the list, with a's new status, comes before b's detail
      await vi.advanceTimersByTimeAsync(0);
      held[2].release();
      await click;
      await vi.advanceTimersByTimeAsync(0);
      expect(held.map((h) => h.method)).toEqual(['runs.get a', 'runs.list', 'runs.get b']); // a not read again over the click
      expect(store.selected?.summary.id).toBe('b');
      stop();
    });

    it('opens nothing after a request the engine refused, which left no run', async () => {
      const fake = installFakeClient((m) => (m === 'runs.list' ? ok([run('t1', 'train')]) : ok(detail('t1'))));
      const store = useRunsStore();
      await store.showEnded('refused-1');
      expect(fake.calls.map((c) => c.method)).toEqual(['runs.list']);
      expect(store.selected).toBeNull();
    });

    it('ignores a dataset build, which records no run', async () => {
      const fake = installFakeClient(() => ok([]));
      const store = useRunsStore();
      const stop = store.follow();
      const build = { jobId: 'd1', phase: 'reading', records: 5, recordsTotal: 10, bytesWritten: 50, bytesTotal: 100, bytesPerSec: 10, etaSeconds: 5 };
      let arrived = 0;
      fake.client.on('datasets.progress', () => arrived++);
      fake.emit('datasets.progress', build);
      expect(arrived).toBe(1); // a valid event: it does arrive
      await vi.advanceTimersByTimeAsync(5 * LIVE_REFRESH_MS);
      expect(fake.calls).toEqual([]);
      stop();
    });
  });
});

describe('live run store', () => {
  it('shows what is prepared before the first step, and cancels with the id it chose while preparing', async () => {
    let finishRun!: () => void;
    const fake = installFakeClient(async (m) => {
      if (m === 'telemetry.subscribe') return ok({ samples: [], gpu: { status: 'unavailable', message: 'no NVIDIA GPU found', restarts: 0 }, leaseId: 'l1' });
      if (m === 'train.run') {
        await new Promise<void>((r) => (finishRun = r));
        return fail('E_CANCELLED', 'run was cancelled while its data was being prepared, before its first step');
      }
      if (m === 'jobs.cancel') {
        finishRun();
        return ok({ cancelled: true });
      }
      return ok({});
    });
    const store = useLiveRunStore();
    const request = TrainRequestSchema.parse({ spec: ModelSpecSchema.parse({ family: 'mlp', input: [4], outputs: 2 }), data: { kind: 'fashion-mnist' } });
    const done = store.start(request);
    await expect.poll(() => fake.calls.some((c) => c.method === 'train.run')).toBe(true);
    const id = store.requestedId;
    expect(id).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
    expect((fake.calls.find((c) => c.method === 'train.run')?.params as { jobId: string }).jobId).toBe(id);
    fake.emit('train.preparing', { jobId: 'someone-elses', stage: 'reading', fraction: 0.9 });
    expect(store.preparing).toBeNull();
    fake.emit('train.preparing', { jobId: id, stage: 'reading', fraction: 0.25 });
    expect(store.preparing).toEqual({ jobId: id, stage: 'reading', fraction: 0.25 });
    expect(store.runId).toBeNull(); // no step yet
    await store.cancel();
    expect(fake.calls.find((c) => c.method === 'jobs.cancel')?.params).toEqual({ jobId: id });
    expect(await done).toBeNull();
    expect(store.error).toMatch(/^run was cancelled while its data was being prepared/);
    expect(store.cancelled).toBe(true);
    expect(store.preparing).toBeNull();
    expect(store.running).toBe(false);
  });
});
