// @vitest-environment happy-dom
// The Runs area's stores over a real ApiClient whose answers the test decides (the contract checks still run).
import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';

import { ModelSpecSchema } from '../../src-main/api/model-spec';
import { TrainRequestSchema } from '../../src-main/api/training';
import { useLiveRunStore } from '../../src-renderer/stores/live-run';
import { useRunsStore } from '../../src-renderer/stores/runs';
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
    expect(store.error).toBe('E_BAD_INPUT: there is no run gone in the workspace /w');
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
    expect(store.error).toBe("cannot list the workspace's model spec files: E_INTERNAL: disk gone");
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
    expect((fake.calls.find((c) => c.method === 'train.run')?.params as { runId: string }).runId).toBe(id);
    fake.emit('train.preparing', { runId: 'someone-elses', stage: 'reading', fraction: 0.9 });
    expect(store.preparing).toBeNull();
    fake.emit('train.preparing', { runId: id, stage: 'reading', fraction: 0.25 });
    expect(store.preparing).toEqual({ runId: id, stage: 'reading', fraction: 0.25 });
    expect(store.runId).toBeNull(); // no step yet
    await store.cancel();
    expect(fake.calls.find((c) => c.method === 'jobs.cancel')?.params).toEqual({ jobId: id });
    expect(await done).toBeNull();
    expect(store.error).toMatch(/^E_CANCELLED: run was cancelled while its data was being prepared/);
    expect(store.preparing).toBeNull();
    expect(store.running).toBe(false);
  });
});
