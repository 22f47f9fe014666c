// The loader's contract: every selected record exactly once per epoch, for any
// worker count, prefetch depth and sample ratio; the same seed, the same order.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { recordsPerEpoch } from '../../src-main/api/training';
import { datasetsRoot } from '../../src-main/core/datasets/cache-store';
import { cacheOf, testWorkspace } from '../helpers/datasets';
import { loadAddon, thrown } from '../helpers/native';
import { npyBytes } from '../helpers/numpy';

const addon = loadAddon();
const N = 1003;
let source: string;
let cleanup: () => void;

beforeAll(async () => {
  const t = await testWorkspace();
  cleanup = t.cleanup;
  // Each record holds its own index, so the data can be checked against the order.
  const data = new Int32Array(N).map((_, i) => i);
  const p = path.join(t.dir, 'sources', 'ids.npy');
  writeFileSync(p, npyBytes('<i4', [N], new Uint8Array(data.buffer)));
  const built = await cacheOf(t.ws, { kind: 'npy', path: p, field: 'id' }, 'ids', 1024);
  source = JSON.stringify({ kind: 'cache', dir: path.join(datasetsRoot(t.ws), built.dataset.id) });
});
afterAll(() => cleanup?.());

const run = (options: object, epochs = 1) => addon.runLoader(source, JSON.stringify(options), epochs);

describe('loader', () => {
  const settings: [number, number, number][] = [];
  for (const workers of [0, 1, 2, 4]) for (const prefetch of [1, 2, 4]) for (const ratio of [1, 0.5, 0.37]) settings.push([workers, prefetch, ratio]);

  it.each(settings)('workers %i, prefetch %i, sample ratio %f: each selected record exactly once per epoch', (workers, prefetch, ratio) => {
    const r = run({ batchSize: 7, workers, prefetch, sampleRatio: ratio, seed: 11, dropLast: false }, 3);
    const expected = recordsPerEpoch(N, ratio); // the count every step and batch limit in TypeScript starts from
    for (const order of r.epochs) {
      expect(order.length).toBe(expected);
      expect(new Set(order).size).toBe(expected);
      for (const i of order) expect(i >= 0 && i < N).toBe(true);
    }
    // The bytes delivered are the records named, in that order.
    const ids = new Int32Array(r.fields.id.buffer.slice(r.fields.id.byteOffset, r.fields.id.byteOffset + r.fields.id.byteLength));
    expect(Array.from(ids)).toEqual(Array.from(r.epochs[0]));
    // Epochs draw different orders (and, below ratio 1, different subsets).
    expect(Array.from(r.epochs[1])).not.toEqual(Array.from(r.epochs[0]));
  });

  it('gives the same order for the same seed whatever the workers and prefetch, another for another seed', () => {
    const a = run({ batchSize: 10, workers: 0, prefetch: 1, seed: 5 }, 2).epochs;
    const b = run({ batchSize: 10, workers: 4, prefetch: 3, seed: 5 }, 2).epochs;
    const c = run({ batchSize: 10, workers: 2, prefetch: 2, seed: 6 }, 2).epochs;
    expect(a.map((e) => Array.from(e))).toEqual(b.map((e) => Array.from(e)));
    expect(Array.from(c[0])).not.toEqual(Array.from(a[0]));
  });

  it('restarts cleanly when an epoch is abandoned with workers mid-flight', () => {
    for (const workers of [1, 2, 4]) {
      const r = run({ batchSize: 9, workers, prefetch: 3, seed: 2, dropLast: false, abandonAfter: 3 }, 6);
      r.epochs.forEach((order, e) => {
        if (e % 2 === 0) expect(order.length).toBe(27);
        else {
          expect(order.length).toBe(N);
          expect(new Set(order).size).toBe(N);
          expect(Array.from(order)).toEqual(Array.from(run({ batchSize: 9, workers: 0, seed: 2, dropLast: false }, e + 1).epochs[e]));
        }
      });
    }
  });

  it('drops the last partial batch only when asked', () => {
    expect(run({ batchSize: 10, workers: 2, dropLast: true }).epochs[0].length).toBe(1000);
    expect(run({ batchSize: 10, workers: 2, dropLast: false }).epochs[0].length).toBe(1003);
  });

  it('reads in order without shuffling', () => {
    expect(Array.from(run({ batchSize: 100, workers: 3, shuffle: false, dropLast: false }).epochs[0])).toEqual(Array.from({ length: N }, (_, i) => i));
  });

  it('refuses bad settings by name', () => {
    expect(thrown(() => run({ batchSize: 0 })).message).toContain('loader batch size must be at least 1, got 0');
    expect(thrown(() => run({ batchSize: 4, prefetch: 0 })).message).toContain('prefetch depth must be 1 to 256, got 0');
    expect(thrown(() => run({ batchSize: 4, sampleRatio: 1.5 })).message).toContain('sample ratio must be in (0, 1]');
    expect(thrown(() => run({ batchSize: 4, fields: ['nope'] })).message).toMatch(/has no field 'nope' \(it has: id\)/);
  });

  it('benchmarks a setting and reports throughput, latency and blocking', async () => {
    const r = await addon.benchLoader(source, JSON.stringify({ batchSize: 50, workers: 2, prefetch: 2 }), 100, 2);
    expect(r.batches).toBe(100);
    expect(r.records).toBe(5000);
    expect(r.samplesPerSec).toBeGreaterThan(0);
    expect(r.latencyP95Ms).toBeGreaterThanOrEqual(r.latencyP50Ms);
    expect(r.waitedFraction).toBeGreaterThanOrEqual(0);
    expect(r.waitedFraction).toBeLessThanOrEqual(1);
  });
});
