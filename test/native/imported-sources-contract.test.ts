// Text-label CSVs and interleaved raw dumps through the contract: request validation, inspect, build, uncached benchmark.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { InspectResult, LoaderBenchResult } from '../../src-main/api/datasets';
import type { Services } from '../../src-main/core/services';
import { testServices } from '../helpers/services';

let services: Services;
let cleanup: () => Promise<void>;
beforeAll(async () => ({ services, cleanup } = await testServices()));
afterAll(async () => cleanup?.());

const source = (name: string, bytes: Uint8Array | string) => writeFileSync(path.join(services.workspace.root, 'sources', name), bytes);

describe('imported sources through the contract', () => {
  it('inspects a CSV with text labels: class names on the field, indices in the preview', async () => {
    source('flowers.csv', 'petal,species\n1.4,setosa\n4.7,versicolor\n6.0,virginica\n1.3,setosa\n');
    const r = (await services.router.dispatch('datasets.inspect', { source: { kind: 'csv', path: 'sources/flowers.csv', label: 'species' } })) as InspectResult;
    expect(r.fields[1]).toEqual({ name: 'y', dtype: 'int32', shape: [], classes: ['setosa', 'versicolor', 'virginica'] });
    expect(r.preview.map((p) => p.y)).toEqual([[0], [1], [2], [0]]);
  });

  it('builds an interleaved raw dump and benchmarks the loader reading it in place', async () => {
    const record = 9 + 4; // x: uint8[3,3], t: float32
    source('records.bin', new Uint8Array(2000 * record).map((_, i) => i % 251));
    const spec = { kind: 'raw', files: [{ path: 'sources/records.bin', record: [{ name: 'x', dtype: 'uint8', shape: [3, 3] }, { name: 't', dtype: 'float32', shape: [] }] }] };
    const inspected = (await services.router.dispatch('datasets.inspect', { source: spec })) as InspectResult;
    expect(inspected).toMatchObject({ records: 2000, uncached: { available: true, reason: null } });
    expect(inspected.preview[1].x).toEqual([13, 14, 15, 16, 17, 18, 19, 20]);
    await services.router.dispatch('datasets.build', { source: spec, name: 'records' });
    const bench = (await services.router.dispatch('datasets.benchmark', { dataset: 'records', batchSize: 100, workers: [0, 2], prefetch: [2], maxSeconds: 0.3 })) as LoaderBenchResult;
    expect(bench.uncachedReason).toBeNull();
    expect(bench.uncached).toHaveLength(2);
    for (const row of bench.uncached ?? []) expect(row.samplesPerSec).toBeGreaterThan(0);
  });

  it('refuses a record layout member that is not a field name, as a bad request', async () => {
    const spec = { kind: 'raw', files: [{ path: 'sources/records.bin', record: [{ name: '../x', dtype: 'uint8', shape: [] }] }] };
    await expect(services.router.dispatch('datasets.inspect', { source: spec })).rejects.toMatchObject({ code: 'E_BAD_REQUEST' });
  });
});
