// @vitest-environment happy-dom
import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';

import { BUILTIN_MODELS, ModelSpecSchema } from '../../src-main/api/model-spec';
import { useBenchmarksStore } from '../../src-renderer/stores/benchmarks';
import { useDatasetsStore } from '../../src-renderer/stores/datasets';
import { useDevicesStore } from '../../src-renderer/stores/devices';
import { useLoader } from '../../src-renderer/stores/load-state';
import { fail, installFakeClient, ok } from './fake-client';

const devices = {
  cpu: { name: 'Test CPU', arch: 'x86_64', logicalCores: 8, simd: ['avx2'] },
  cuda: { compiled: true, available: false, reason: 'no NVIDIA driver found', driverVersion: 0, runtimeVersion: 13000, devices: [] },
};
const version = { version: '0.1.0', napiVersion: 8, cudaCompiled: true, debugEntryPoints: false, hostPid: 42 };

beforeEach(() => setActivePinia(createPinia()));

describe('useLoader', () => {
  it('is loading while the load runs, and clears the previous error when it starts', async () => {
    let release!: () => void;
    let attempt = 0;
    const loader = useLoader(async () => {
      attempt += 1;
      if (attempt === 1) throw new Error('disk gone');
      await new Promise<void>((r) => (release = r));
    });
    await loader.run();
    expect(loader.error.value).toBe('Error: disk gone');
    expect(loader.loading.value).toBe(false);

    const second = loader.run();
    expect(loader.loading.value).toBe(true);
    expect(loader.error.value).toBeNull();
    release();
    await second;
    expect(loader.loading.value).toBe(false);
    expect(loader.error.value).toBeNull();
  });
});

describe('devices store', () => {
  it('holds the engine’s devices and version after a refresh', async () => {
    installFakeClient((m) => (m === 'engine.devices' ? ok(devices) : ok(version)));
    const store = useDevicesStore();
    await store.refresh();
    expect(store.devices?.cpu.name).toBe('Test CPU');
    expect(store.version?.hostPid).toBe(42);
    expect(store.error).toBeNull();
  });

  it('shows the contract code and message when the engine host fails', async () => {
    installFakeClient(() => fail('E_ENGINE_CRASHED', 'the engine host exited; it is restarting'));
    const store = useDevicesStore();
    await store.refresh();
    expect(store.error).toBe('the engine stopped: the engine host exited; it is restarting');
    expect(store.loading).toBe(false);
    expect(store.devices).toBeNull();
  });
});

describe('datasets store', () => {
  it('keeps a failed remove on screen after the list is read again', async () => {
    const fake = installFakeClient((m) => (m === 'datasets.remove' ? fail('E_BAD_INPUT', 'no dataset ds-1 in this workspace') : ok([])));
    const store = useDatasetsStore();
    await store.remove('ds-1');
    expect(fake.calls.map((c) => c.method)).toEqual(['datasets.remove', 'datasets.list']);
    expect(store.error).toBe('no dataset ds-1 in this workspace');
  });

  it('reports a verify failure per dataset, not as the store’s error', async () => {
    installFakeClient(() => fail('E_DATA', 'shard-00000.bin: checksum differs'));
    const store = useDatasetsStore();
    await store.verify('ds-1');
    expect(store.verified['ds-1']).toBe('shard-00000.bin: checksum differs');
    expect(store.error).toBeNull();
  });
});

describe('benchmarks store', () => {
  it('keeps the benchmark’s failure after the refresh that follows it', async () => {
    installFakeClient((m) => (m === 'benchmark.training' ? fail('E_BAD_INPUT', 'batchSize 0: use at least 1') : ok([])));
    const store = useBenchmarksStore();
    await store.start({ spec: ModelSpecSchema.parse(BUILTIN_MODELS.mlp), data: { kind: 'example-board' }, options: { batchSize: 0 } });
    expect(store.running).toBe(false);
    expect(store.error).toBe('batchSize 0: use at least 1');
  });
});
