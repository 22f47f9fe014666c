import { describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import { methodNames } from '../../src-main/api/methods';
import { rejection } from '../helpers/rejection';
import type { ApiHandlers } from '../../src-main/core/api-router';
import { createApiRouter } from '../../src-main/core/api-router';

const devices = {
  cpu: { name: 'Test CPU', arch: 'x86_64', logicalCores: 4, simd: ['avx2'] },
  cuda: { compiled: false, available: false, reason: 'no build', driverVersion: 0, runtimeVersion: 0, devices: [] },
};

// Methods a test does not exercise answer with an error, so the contract can grow without touching this file.
const unused = Object.fromEntries(methodNames.map((m) => [m, () => Promise.reject(new ApiError('E_INTERNAL', `${m} is not used here`))]));

function router(overrides: Partial<ApiHandlers> = {}) {
  return createApiRouter({
    ...(unused as unknown as ApiHandlers),
    'engine.version': async () => ({ version: '0.1.0', napiVersion: 8, cudaCompiled: false, debugEntryPoints: false, hostPid: 1 }),
    'engine.devices': async () => devices,
    'engine.ping': async () => ({ hostPid: 1, hostUptimeMs: 5 }),
    'engine.status': async () => ({ state: 'ready', pid: 1, restarts: 0, lastFailure: null }),
    ...overrides,
  });
}

describe('API router', () => {
  it('dispatches a valid request to its handler', async () => {
    await expect(router().dispatch('engine.devices', {})).resolves.toEqual(devices);
  });

  it('treats missing params as an empty object', async () => {
    await expect(router().dispatch('engine.ping', undefined)).resolves.toMatchObject({ hostPid: 1 });
  });

  it('refuses an unknown method by name', async () => {
    const err = await rejection(router().dispatch('engine.format_disk', {}));
    expect(err.code).toBe('E_UNKNOWN_METHOD');
    expect(err.message).toContain('engine.format_disk');
  });

  it('refuses params that do not match the schema, naming the bad key', async () => {
    const err = await rejection(router().dispatch('engine.devices', { verbose: true }));
    expect(err.code).toBe('E_BAD_REQUEST');
    expect(err.message).toContain('engine.devices');
    expect(err.message).toContain('verbose');
  });

  it('refuses over-long paths before any handler runs: a folder to list, a source to preview (re-attack 18)', async () => {
    const long = 'a/'.repeat(2049);
    const listed = await rejection(router().dispatch('files.list', { dir: long }));
    expect(listed.code).toBe('E_BAD_REQUEST');
    expect(listed.message).toMatch(/dir: .*4096/);
    const inspected = await rejection(router().dispatch('datasets.inspect', { source: { kind: 'npy', path: long } }));
    expect(inspected.code).toBe('E_BAD_REQUEST');
    expect(inspected.message).toMatch(/path: .*4096/);
    // A field name is echoed in every preview row: 3 M characters came back as an 18 MB answer (re-attack 19).
    const named = await rejection(router().dispatch('datasets.inspect', { source: { kind: 'npy', path: 'sources/x.npy', field: 'f'.repeat(129) } }));
    expect(named.code).toBe('E_BAD_REQUEST');
    expect(named.message).toMatch(/field: .*128/);
    const many = Array.from({ length: 65 }, (_, i) => ({ path: `sources/${i}.idx`, field: 'x' }));
    expect((await rejection(router().dispatch('datasets.inspect', { source: { kind: 'idx', files: many } }))).code).toBe('E_BAD_REQUEST');
  });

  it('refuses params that are not an object', async () => {
    const err = await rejection(router().dispatch('engine.devices', 'all'));
    expect(err.code).toBe('E_BAD_REQUEST');
    expect(err.message).toMatch(/params: .*object/);
  });

  it('keeps the code of an ApiError thrown by a handler', async () => {
    const r = router({ 'engine.devices': () => Promise.reject(new ApiError('E_CUDA', 'cudaMalloc failed')) });
    const err = await rejection(r.dispatch('engine.devices', {}));
    expect(err.code).toBe('E_CUDA');
    expect(err.message).toBe('cudaMalloc failed');
  });

  it('turns any other error into E_INTERNAL with its message', async () => {
    const r = router({ 'engine.devices': () => Promise.reject(new TypeError('x is undefined')) });
    const err = await rejection(r.dispatch('engine.devices', {}));
    expect(err.code).toBe('E_INTERNAL');
    expect(err.message).toBe('x is undefined');
  });
});
