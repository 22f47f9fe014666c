// The loader through the GPU prefetch ring (the loader benchmark with a CUDA
// device): every record of an epoch counted once, the partial last batch
// included. Skips without a device, or fails under TB_REQUIRE_GPU=1 (gpu-gate.ts).
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { datasetsRoot } from '../../src-main/core/datasets/cache-store';
import { cacheOf, testWorkspace } from '../helpers/datasets';
import { loadAddon } from '../helpers/native';
import { npyBytes } from '../helpers/numpy';
import { gpuAvailable } from './gpu-gate';

const addon = loadAddon();
const gpu = gpuAvailable('GPU loader tests');
const N = 1003;

describe.skipIf(!gpu)('loader benchmark on cuda:0', () => {
  let source = '';
  let cleanup: (() => void) | undefined;
  beforeAll(async () => {
    const t = await testWorkspace();
    cleanup = t.cleanup;
    const p = path.join(t.dir, 'sources', 'ids.npy');
    writeFileSync(p, npyBytes('<i4', [N], new Uint8Array(new Int32Array(N).map((_, i) => i).buffer)));
    const built = await cacheOf(t.ws, { kind: 'npy', path: p, field: 'id' }, 'ids', 1024);
    source = JSON.stringify({ kind: 'cache', dir: path.join(datasetsRoot(t.ws), built.dataset.id) });
  });
  afterAll(() => cleanup?.());

  it('counts every record of an epoch once, the partial last batch included', async () => {
    // 1003 records in batches of 10: 100 full batches and one of 3, through a ring of 3 slots.
    const r = await addon.benchLoader(source, JSON.stringify({ batchSize: 10, workers: 2, dropLast: false, device: 'cuda:0', gpuPrefetch: 3 }), 101, 60);
    expect(r.batches).toBe(101);
    expect(r.records).toBe(N);
    expect(r.bytes).toBe(N * 4);
  });
});
