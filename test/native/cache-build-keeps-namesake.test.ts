// A build that would write a cache the reader refuses fails, in words, and the good cache of its name stays.
import { describe, expect, it } from 'vitest';

import type { SourceSpec } from '../../src-main/api/datasets';
import { buildCache } from '../../src-main/core/datasets/cache-builder';
import { listDatasets, verifyDataset } from '../../src-main/core/datasets/cache-store';
import type { RecordSource } from '../../src-main/core/datasets/importers/record-source';
import { cacheOf, workspaceFixture } from '../helpers/datasets';
import { npyBytes } from '../helpers/numpy';

const fx = workspaceFixture();

/** Builds a good cache named `name`; returns a check that it is still the one cache of that name, and whole. */
async function goodCache(name: string) {
  const p = fx.file(`${name}-good.npy`, npyBytes('<f4', [40, 8], new Uint8Array(40 * 32).map((_, i) => i % 251)));
  const { id } = (await cacheOf(fx.ws, { kind: 'npy', path: p, field: 'x' }, name, 512)).dataset;
  return async () => {
    expect((await listDatasets(fx.ws)).filter((d) => d.name === name)).toEqual([expect.objectContaining({ id, records: 40, problem: null })]);
    expect(await verifyDataset(fx.ws, name)).toMatchObject({ id, ok: true, problems: [] });
  };
}

/** A source that says what its header said, as an importer without the header checks would pass it on. */
function planted(records: number, shape: number[]): RecordSource {
  return {
    kind: 'npy',
    description: 'planted.npy',
    records,
    fields: [{ name: 'x', dtype: 'float32', shape }],
    files: [],
    sourceBytes: 0,
    options: {},
    uncachedReason: null,
    rawLayout: () => null,
    async *chunks() {
      yield { count: records, fields: [new Uint8Array(0)] };
    },
  };
}

describe('a refused build keeps the cache of its name', () => {
  it('an .npy with a 0 in its record shape does not retire the good cache', async () => {
    const stillThere = await goodCache('victim');
    const spec: SourceSpec = { kind: 'npy', path: fx.file('z0.npy', npyBytes('<f4', [1000000000000, 0], new Uint8Array(0))), field: 'x' };
    await expect(cacheOf(fx.ws, spec, 'victim')).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringMatching(/z0\.npy: the \.npy header's shape \(1000000000000, 0\) has a 0/) });
    await stillThere();
  });

  it('a source whose records hold no values: refused before anything is written', async () => {
    const stillThere = await goodCache('empty-records');
    await expect(buildCache(fx.ws, planted(1000, [0]), { name: 'empty-records', shardBytes: 4096, fieldMap: [] }, { jobId: 'e' })).rejects.toMatchObject({
      code: 'E_DATA',
      message:
        "planted.npy would make a cache that cannot be read (records per shard (Infinity) must be a number; field 'x' dimension 1 (0) must be at least 1; field 'x' bytes per record (0) must be at least 1): nothing was published, and any cache named 'empty-records' is kept",
    });
    await stillThere();
  });

  it('a source of more records than can be counted exactly', async () => {
    const stillThere = await goodCache('uncountable');
    await expect(buildCache(fx.ws, planted(1e23, [1]), { name: 'uncountable', shardBytes: 4096, fieldMap: [] }, { jobId: 'u' })).rejects.toMatchObject({
      code: 'E_DATA',
      message:
        "planted.npy would make a cache that cannot be read (the record count (1e+23) is more than the 9007199254740991 that can be counted exactly): nothing was published, and any cache named 'uncountable' is kept",
    });
    await stillThere();
  });
});
