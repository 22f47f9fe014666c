// Bad sources and damaged caches: each a clear error, and nothing published.
import { promises as fs, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

import { describe, expect, it } from 'vitest';

import type { SourceSpec } from '../../src-main/api/datasets';
import { datasetsRoot, listDatasets, verifyDataset } from '../../src-main/core/datasets/cache-store';
import { buildCache } from '../../src-main/core/datasets/cache-builder';
import { openSource } from '../../src-main/core/datasets/importers/open-source';
import { cacheOf, workspaceFixture } from '../helpers/datasets';
import { loadAddon, thrown } from '../helpers/native';
import { npyBytes } from '../helpers/numpy';

const addon = loadAddon();
const fx = workspaceFixture();
const file = (name: string, bytes: Uint8Array) => fx.file(name, bytes);
const idx = (dims: number[], body: number[]) => {
  const h = Buffer.alloc(4 + 4 * dims.length);
  h[2] = 0x08;
  h[3] = dims.length;
  dims.forEach((d, i) => h.writeUInt32BE(d, 4 + 4 * i));
  return Buffer.concat([h, Buffer.from(body)]);
};

/** Building must fail with `message` and leave no cache behind. */
async function refused(spec: SourceSpec, message: RegExp, code = 'E_DATA') {
  const before = readdirSync(datasetsRoot(fx.ws)).filter((n) => !n.startsWith('.'));
  await expect(cacheOf(fx.ws, spec, 'bad')).rejects.toMatchObject({ code, message: expect.stringMatching(message) });
  const after = readdirSync(datasetsRoot(fx.ws)).filter((n) => !n.startsWith('.'));
  expect(after).toEqual(before);
  expect(readdirSync(datasetsRoot(fx.ws)).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
}

describe('bad sources are refused clearly and publish nothing', () => {
  it('a truncated gzip stream', async () => {
    const gz = gzipSync(idx([50, 4], Array(200).fill(7)));
    const p = file('cut.idx.gz', gz.subarray(0, gz.length - 30));
    await refused({ kind: 'idx', files: [{ path: p, field: 'x' }] }, /cut\.idx\.gz (is not a valid gzip stream|is truncated)/);
  });

  it('wrong IDX magic, showing the bytes', async () => {
    const bytes = idx([2], [1, 2]);
    bytes[1] = 0x42;
    await refused({ kind: 'idx', files: [{ path: file('magic.idx', bytes), field: 'x' }] }, /is not an IDX file: magic bytes are 00 42 08 01/);
  });

  it('an .npy whose header claims more data than the file holds', async () => {
    const p = file('short.npy', npyBytes('<f4', [100, 3], new Uint8Array(40)));
    await refused({ kind: 'npy', path: p, field: 'x' }, /short\.npy: the header claims 100x3 elements of 4 bytes \(1200 bytes\) but the file holds 40/);
  });

  it('a Fortran-order array, with the fix', async () => {
    const p = file('fortran.npy', npyBytes('<f4', [4, 3], new Uint8Array(48), true));
    await refused({ kind: 'npy', path: p, field: 'x' }, /Fortran \(column-major\) order.*np\.ascontiguousarray/);
  });

  it('a headerless dump given as .npy, pointing at the raw importer', async () => {
    const p = file('dump.npy', new Uint8Array(64));
    await refused({ kind: 'npy', path: p, field: 'x' }, /not a \.npy file.*import it as raw data/);
  });

  it('a raw dump whose size does not fit the given record shape', async () => {
    const p = file('odd.bin', new Uint8Array(10));
    await refused({ kind: 'raw', files: [{ path: p, field: 'x', dtype: 'float32', shape: [2] }] }, /10 bytes, not a whole number of float32 records of shape \[2\] \(8 bytes each\)/);
  });

  it('a CSV with a non-numeric cell, naming the line and column', async () => {
    const p = file('bad.csv', Buffer.from('a,b,label\n1,2,0\n3,oops,1\n'));
    await refused({ kind: 'csv', path: p, label: 'label', labelDtype: 'int32' }, /bad\.csv line 3, column 'b' \(2\): "oops" is not a number/);
  });

  it('a CSV label column that does not exist', async () => {
    const p = file('nolabel.csv', Buffer.from('a,b\n1,2\n'));
    await refused({ kind: 'csv', path: p, label: 'class', labelDtype: 'int32' }, /label column 'class' is not in .*columns: a, b/, 'E_BAD_INPUT');
  });

  it('fields of different lengths', async () => {
    await refused(
      { kind: 'idx', files: [{ path: file('im3.idx', idx([3, 2], [1, 2, 3, 4, 5, 6])), field: 'x' }, { path: file('lb2.idx', idx([2], [0, 1])), field: 'y' }] },
      /mismatched field lengths: .*im3\.idx has 3 records but .*lb2\.idx has 2/,
    );
  });

  it('a cancelled build', async () => {
    const controller = new AbortController();
    controller.abort();
    const source = await openSource({ kind: 'synthetic-board', records: 50, seed: 1 });
    await expect(buildCache(fx.ws, source, { name: 'cancelled', shardBytes: 1 << 20, fieldMap: [] }, { jobId: 'c', signal: controller.signal })).rejects.toMatchObject({ code: 'E_CANCELLED' });
    expect(readdirSync(datasetsRoot(fx.ws)).filter((n) => n.startsWith('cancelled') || n.startsWith('.tmp-'))).toEqual([]);
  });
});

describe('damaged caches are found and named', () => {
  async function fresh(name: string) {
    const p = file(`${name}.npy`, npyBytes('<f4', [40, 8], new Uint8Array(40 * 32).map((_, i) => i % 251)));
    const built = await cacheOf(fx.ws, { kind: 'npy', path: p, field: 'x' }, name, 512);
    return { id: built.dataset.id, dir: path.join(datasetsRoot(fx.ws), built.dataset.id) };
  }

  it('verify names the corrupted shard; opening still works (checksums are on request)', async () => {
    const { id, dir } = await fresh('corrupt');
    const shard = path.join(dir, 'shard-00002.bin');
    const bytes = readFileSync(shard);
    bytes[100] ^= 0xff;
    writeFileSync(shard, bytes);
    const report = await verifyDataset(fx.ws, id);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([expect.stringMatching(/^shard-00002\.bin is corrupted: its SHA-256 is/)]);
    expect(addon.sourceInfo(JSON.stringify({ kind: 'cache', dir })).records).toBe(40);
  });

  it('a truncated shard: the native loader and the listing both say which and why', async () => {
    const { dir } = await fresh('truncated');
    await fs.truncate(path.join(dir, 'shard-00001.bin'), 100);
    const err = thrown(() => addon.sourceInfo(JSON.stringify({ kind: 'cache', dir })));
    expect(err.code).toBe('E_DATA');
    expect(err.message).toMatch(/shard-00001\.bin: is 100 bytes but the manifest says \d+ \(truncated or replaced\)/);
    const listed = (await listDatasets(fx.ws)).find((d) => d.id.startsWith('truncated'));
    expect(listed?.problem).toMatch(/shard-00001\.bin is 100 bytes/);
  });

  it('a manifest from a future version', async () => {
    const { dir } = await fresh('future');
    const m = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
    writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ ...m, formatVersion: 7 }));
    const err = thrown(() => addon.sourceInfo(JSON.stringify({ kind: 'cache', dir })));
    expect(err.message).toMatch(/newer Trainbench \(cache format 7; this one reads 1\)/);
    const listed = (await listDatasets(fx.ws)).find((d) => d.id.startsWith('future'));
    expect(listed?.problem).toMatch(/newer Trainbench \(cache format 7/);
  });

  it('a shard with a bad header', async () => {
    const { dir } = await fresh('magic');
    const shard = path.join(dir, 'shard-00000.bin');
    const bytes = readFileSync(shard);
    bytes.write('XXXX', 0);
    writeFileSync(shard, bytes);
    expect(thrown(() => addon.sourceInfo(JSON.stringify({ kind: 'cache', dir }))).message).toMatch(/shard-00000\.bin: has no shard header \(bad magic\)/);
  });

  it('a directory without a manifest never opens', () => {
    const dir = path.join(datasetsRoot(fx.ws), 'empty');
    mkdirSync(dir);
    expect(thrown(() => addon.sourceInfo(JSON.stringify({ kind: 'cache', dir }))).message).toMatch(/no manifest\.json/);
  });
});
