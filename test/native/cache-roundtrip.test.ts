// Every importer, every dtype: values read back through the native loader equal the source.
import path from 'node:path';
import { gzipSync } from 'node:zlib';

import { describe, expect, it } from 'vitest';

import type { CacheDType } from '../../src-main/api/datasets';
import { DTYPE_BYTES } from '../../src-main/api/datasets';
import { datasetsRoot } from '../../src-main/core/datasets/cache-store';
import { encode } from '../../src-main/core/datasets/dtype-codec';
import { openSource } from '../../src-main/core/datasets/importers/open-source';
import { cacheOf, workspaceFixture } from '../helpers/datasets';
import { lcg, loadAddon } from '../helpers/native';
import { npyBytes, zipBytes } from '../helpers/numpy';

const addon = loadAddon();
const fx = workspaceFixture();
const file = (name: string, bytes: Uint8Array) => fx.file(name, bytes);

/** Reads a cache back in record order through the threaded loader (odd batch, several workers). */
function readBack(dir: string): Record<string, Buffer> {
  const r = addon.runLoader(JSON.stringify({ kind: 'cache', dir }), JSON.stringify({ batchSize: 5, workers: 3, prefetch: 2, shuffle: false, dropLast: false }));
  return r.fields as Record<string, Buffer>;
}

const NPY_CODES: Record<CacheDType, string> = {
  bool: '|b1', int8: '|i1', uint8: '|u1', int16: '<i2', uint16: '<u2', int32: '<i4', uint32: '<u4', int64: '<i8', uint64: '<u8',
  float16: '<f2', float32: '<f4', float64: '<f8',
};

/** n records of `per` values of a dtype, non-trivial and exactly representable. */
function values(dtype: CacheDType, count: number, seed: number): number[] {
  const r = lcg(seed);
  return Array.from({ length: count }, () => {
    const v = Math.floor(r() * 200) - (dtype.startsWith('u') || dtype === 'bool' ? 0 : 100);
    if (dtype === 'bool') return v % 2;
    if (dtype.startsWith('float')) return v / 4;
    return Math.max(dtype.startsWith('u') ? 0 : -100, v);
  });
}

describe('cache round trips through the native loader', () => {
  it.each(Object.keys(NPY_CODES) as CacheDType[])('npy %s: odd record size, several shards, a partial last shard', async (dtype) => {
    const records = 37;
    const shape = [3, 5]; // 15 values per record: odd sizes for every dtype
    const data = encode(values(dtype, records * 15, 3), dtype);
    const p = file(`a-${dtype}.npy`, npyBytes(NPY_CODES[dtype], [records, ...shape], data));
    // 8 records per shard: 37 records make 4 full shards and a partial fifth.
    const built = await cacheOf(fx.ws, { kind: 'npy', path: p, field: 'x' }, `npy-${dtype}`, 128 + 8 * 15 * DTYPE_BYTES[dtype]);
    expect(built.dataset.shards).toBe(5);
    expect(built.dataset.records).toBe(records);
    expect(built.dataset.fields[0]).toMatchObject({ name: 'x', dtype, shape });
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(Buffer.compare(back.x, Buffer.from(data))).toBe(0);
  });

  it('npy format version 2.0 (4-byte header length)', async () => {
    const data = encode(values('int16', 6 * 2, 5), 'int16');
    const p = file('v2.npy', npyBytes('<i2', [6, 2], data, false, 2));
    const built = await cacheOf(fx.ws, { kind: 'npy', path: p, field: 'x' }, 'npy-v2');
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(Buffer.compare(back.x, Buffer.from(data))).toBe(0);
  });

  it('npy big-endian values are converted to little-endian', async () => {
    const be = Buffer.alloc(4 * 6);
    [1, -2, 3, 70000, -5, 6].forEach((v, i) => be.writeInt32BE(v, 4 * i));
    const p = file('be.npy', npyBytes('>i4', [6], be));
    const built = await cacheOf(fx.ws, { kind: 'npy', path: p, field: 'y' }, 'npy-be');
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(Array.from(new Int32Array(back.y.buffer.slice(back.y.byteOffset, back.y.byteOffset + 24)))).toEqual([1, -2, 3, 70000, -5, 6]);
  });

  it('structured npy: one field per member, padding skipped', async () => {
    const n = 9;
    const item = 12 + 2 + 2 + 8; // a: 3 x f4, b: i2, pad: V2, c: f8
    const raw = Buffer.alloc(n * item);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < 3; k++) raw.writeFloatLE(i + k / 4, i * item + 4 * k);
      raw.writeInt16LE(-i, i * item + 12);
      raw.writeDoubleLE(i * 1.5, i * item + 16);
    }
    const descr = "[('a', '<f4', (3,)), ('b', '<i2'), ('', '|V2'), ('c', '<f8')]";
    const p = file('struct.npy', npyBytes(descr, [n], raw));
    const built = await cacheOf(fx.ws, { kind: 'npy', path: p, field: 'x' }, 'npy-struct');
    expect(built.dataset.fields.map((f) => `${f.name}:${f.dtype}[${f.shape}]`)).toEqual(['a:float32[3]', 'b:int16[]', 'c:float64[]']);
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(back.a.readFloatLE(4 * (3 * 4 + 2))).toBe(4.5);
    expect(back.b.readInt16LE(2 * 7)).toBe(-7);
    expect(back.c.readDoubleLE(8 * 8)).toBe(12);
  });

  it('structured npy with several structs per record: cached member by member, never read in place', async () => {
    const n = 4;
    const item = 4 + 2; // a: f4, b: i2; shape (n, 3): three structs per record
    const raw = Buffer.alloc(n * 3 * item);
    for (let e = 0; e < n * 3; e++) {
      raw.writeFloatLE(e / 2, e * item);
      raw.writeInt16LE(-e, e * item + 4);
    }
    const spec = { kind: 'npy' as const, path: file('struct-3.npy', npyBytes("[('a', '<f4'), ('b', '<i2')]", [n, 3], raw)), field: 'x' };
    const built = await cacheOf(fx.ws, spec, 'npy-struct-3');
    expect(built.dataset.fields.map((f) => `${f.name}:${f.dtype}[${f.shape}]`)).toEqual(['a:float32[3]', 'b:int16[3]']);
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(Array.from({ length: n * 3 }, (_, e) => back.a.readFloatLE(4 * e))).toEqual(Array.from({ length: n * 3 }, (_, e) => e / 2));
    expect(Array.from({ length: n * 3 }, (_, e) => back.b.readInt16LE(2 * e))).toEqual(Array.from({ length: n * 3 }, (_, e) => -e || 0));
    const source = await openSource(spec);
    expect(source.rawLayout()).toBeNull();
    expect(source.uncachedReason).toMatch(/struct-3\.npy holds several structs per record/);
  });

  it.each([false, true])('npz (deflated: %s): one field per array', async (deflate) => {
    const x = encode(values('float32', 11 * 4, 1), 'float32');
    const y = encode(values('int64', 11, 2), 'int64');
    const p = file(`arrays-${deflate}.npz`, zipBytes([
      { name: 'x.npy', data: npyBytes('<f4', [11, 4], x) },
      { name: 'labels.npy', data: npyBytes('<i8', [11], y) },
    ], deflate));
    const built = await cacheOf(fx.ws, { kind: 'npz', path: p }, `npz-${deflate}`);
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(Buffer.compare(back.x, Buffer.from(x))).toBe(0);
    expect(Buffer.compare(back.labels, Buffer.from(y))).toBe(0);
  });

  it('raw dumps (ndarray.tofile named .npy) with the dtype and shape given', async () => {
    const feats = Uint8Array.from({ length: 13 * 7 }, (_, i) => (i * 37) % 256);
    const targ = encode(values('float16', 13 * 3, 9), 'float16');
    const built = await cacheOf(fx.ws, {
      kind: 'raw',
      files: [
        { path: file('features.npy', feats), field: 'x', dtype: 'uint8', shape: [7] },
        { path: file('targets.npy', targ), field: 't', dtype: 'float16', shape: [3] },
      ],
    }, 'raw');
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(Buffer.compare(back.x, Buffer.from(feats))).toBe(0);
    expect(Buffer.compare(back.t, Buffer.from(targ))).toBe(0);
  });

  it('CSV: numeric columns become x (float32), the label column y', async () => {
    const rows = ['a,b,"label",c', '1,2.5,0,-3', '4,5,2,6e2', '', '"7",8,1,9'];
    const p = file('t.csv', Buffer.from(rows.join('\n') + '\n'));
    const built = await cacheOf(fx.ws, { kind: 'csv', path: p, label: 'label', labelDtype: 'int32' }, 'csv');
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(Array.from(new Float32Array(back.x.buffer.slice(back.x.byteOffset, back.x.byteOffset + 36)))).toEqual([1, 2.5, -3, 4, 5, 600, 7, 8, 9]);
    expect(Array.from(new Int32Array(back.y.buffer.slice(back.y.byteOffset, back.y.byteOffset + 12)))).toEqual([0, 2, 1]);
  });

  it('CSV text labels (iris): sorted class names in the manifest, indices in the records', async () => {
    const rows = [
      'sepal_length,sepal_width,species',
      '5.1,3.5,setosa',
      '7.0,3.2,versicolor',
      '6.3,3.3,virginica',
      '4.9,3.0,setosa',
      '5.5,2.3,"versicolor, tall"',
      '6.5,2.8,versicolor',
    ];
    const p = file('iris.csv', Buffer.from(rows.join('\r\n') + '\r\n'));
    const built = await cacheOf(fx.ws, { kind: 'csv', path: p, label: 'species', labelDtype: 'int32' }, 'iris');
    expect(built.dataset.fields[1]).toMatchObject({ name: 'y', dtype: 'int32', classes: ['setosa', 'versicolor', 'versicolor, tall', 'virginica'] });
    expect(built.dataset.fields[0].classes).toBeUndefined();
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(Array.from(new Int32Array(back.y.buffer.slice(back.y.byteOffset, back.y.byteOffset + 24)))).toEqual([0, 1, 3, 0, 2, 1]);
    expect(Array.from(new Float32Array(back.x.buffer.slice(back.x.byteOffset, back.x.byteOffset + 8)))).toEqual([5.099999904632568, 3.5]);
  });

  it('CSV numeric labels keep their values and get no class names', async () => {
    const p = file('numeric.csv', Buffer.from('a,y\n1,2\n3,0\n'));
    const built = await cacheOf(fx.ws, { kind: 'csv', path: p, label: 'y', labelDtype: 'int32' }, 'numeric-labels');
    expect(built.dataset.fields[1].classes).toBeUndefined();
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(Array.from(new Int32Array(back.y.buffer.slice(back.y.byteOffset, back.y.byteOffset + 8)))).toEqual([2, 0]);
  });

  it('an interleaved raw dump (structured tofile) equals the structured .npy, cached and read in place', async () => {
    const n = 23;
    const record = 7 + 3 * 2 + 4; // features u1[7], policy f2[3], value f4: packed, as tofile() writes
    const raw = Buffer.alloc(n * record);
    const feats = values('uint8', n * 7, 11);
    const policy = encode(values('float16', n * 3, 12), 'float16');
    const value = encode(values('float32', n, 13), 'float32');
    for (let i = 0; i < n; i++) {
      raw.set(feats.slice(i * 7, i * 7 + 7), i * record);
      raw.set(policy.subarray(i * 6, i * 6 + 6), i * record + 7);
      raw.set(value.subarray(i * 4, i * 4 + 4), i * record + 13);
    }
    const descr = "[('features', '|u1', (7,)), ('policy', '<f2', (3,)), ('value', '<f4')]";
    const npy = await cacheOf(fx.ws, { kind: 'npy', path: file('structured.npy', npyBytes(descr, [n], raw)), field: 'x' }, 'interleaved-npy');
    const spec = {
      kind: 'raw' as const,
      files: [{
        path: file('structured.bin', raw),
        record: [
          { name: 'features', dtype: 'uint8' as const, shape: [7] },
          { name: 'policy', dtype: 'float16' as const, shape: [3] },
          { name: 'value', dtype: 'float32' as const, shape: [] },
        ],
      }],
    };
    const dump = await cacheOf(fx.ws, spec, 'interleaved-raw', 512);
    expect(dump.dataset.shards).toBeGreaterThan(1);
    expect(dump.dataset.fields.map((f) => `${f.name}:${f.dtype}[${f.shape}]`)).toEqual(['features:uint8[7]', 'policy:float16[3]', 'value:float32[]']);
    const fromNpy = readBack(path.join(datasetsRoot(fx.ws), npy.dataset.id));
    const fromDump = readBack(path.join(datasetsRoot(fx.ws), dump.dataset.id));
    for (const f of ['features', 'policy', 'value']) expect(Buffer.compare(fromDump[f], fromNpy[f])).toBe(0);
    expect(Buffer.compare(fromDump.features, Buffer.from(feats))).toBe(0);

    // The uncached path: the native loader reads each member in place, one record size apart.
    const layout = (await openSource(spec)).rawLayout();
    expect(layout?.map((l) => [l.name, l.byteOffset, l.byteStride])).toEqual([['features', 0, 17], ['policy', 7, 17], ['value', 13, 17]]);
    const inPlace = addon.runLoader(
      JSON.stringify({ kind: 'raw', layout: { records: n, fields: layout } }),
      JSON.stringify({ batchSize: 5, workers: 2, prefetch: 2, shuffle: false, dropLast: false }),
    ).fields as Record<string, Buffer>;
    for (const f of ['features', 'policy', 'value']) expect(Buffer.compare(inPlace[f], fromNpy[f])).toBe(0);
  });

  it.each([false, true])('IDX (gzip: %s), multi-byte big-endian values included', async (gz) => {
    const idx = (type: number, dims: number[], body: Buffer) => {
      const h = Buffer.alloc(4 + 4 * dims.length);
      h[2] = type;
      h[3] = dims.length;
      dims.forEach((d, i) => h.writeUInt32BE(d, 4 + 4 * i));
      const all = Buffer.concat([h, body]);
      return gz ? gzipSync(all) : all;
    };
    const pixels = Buffer.from(Array.from({ length: 6 * 4 }, (_, i) => i * 9));
    const labels = Buffer.alloc(12);
    [7, -1, 300, 0, 5, 1].forEach((v, i) => labels.writeInt16BE(v, 2 * i));
    const built = await cacheOf(fx.ws, {
      kind: 'idx',
      files: [
        { path: file(`im-${gz}.idx`, idx(0x08, [6, 2, 2], pixels)), field: 'x' },
        { path: file(`lb-${gz}.idx`, idx(0x0b, [6], labels)), field: 'y' },
      ],
    }, `idx-${gz}`);
    const back = readBack(path.join(datasetsRoot(fx.ws), built.dataset.id));
    expect(Buffer.compare(back.x, pixels)).toBe(0);
    expect(Array.from(new Int16Array(back.y.buffer.slice(back.y.byteOffset, back.y.byteOffset + 12)))).toEqual([7, -1, 300, 0, 5, 1]);
  });

  it('the synthetic board dataset: same records for any chunking, valid policy distributions', async () => {
    const a = await cacheOf(fx.ws, { kind: 'synthetic-board', records: 24, seed: 3 }, 'board-a', 100_000);
    const b = await cacheOf(fx.ws, { kind: 'synthetic-board', records: 24, seed: 3 }, 'board-b', 30_000);
    expect(b.dataset.shards).toBeGreaterThan(a.dataset.shards);
    const ra = readBack(path.join(datasetsRoot(fx.ws), a.dataset.id));
    const rb = readBack(path.join(datasetsRoot(fx.ws), b.dataset.id));
    for (const f of ['x', 'policy', 'value']) expect(Buffer.compare(ra[f], rb[f])).toBe(0);
    const policy = new Uint16Array(ra.policy.buffer.slice(ra.policy.byteOffset, ra.policy.byteOffset + 1496 * 2));
    const { halfToFloat } = await import('../../src-main/core/datasets/float16');
    const sum = Array.from(policy, halfToFloat).reduce((s, v) => s + v, 0);
    expect(sum).toBeGreaterThan(0.97);
    expect(sum).toBeLessThan(1.03);
  });

  it('a rebuild with the same source and settings is a cache hit; other settings are a new cache', async () => {
    const p = file('hit.npy', npyBytes('<f4', [5, 2], encode(values('float32', 10, 4), 'float32')));
    const first = await cacheOf(fx.ws, { kind: 'npy', path: p, field: 'x' }, 'hit');
    const again = await cacheOf(fx.ws, { kind: 'npy', path: p, field: 'x' }, 'hit');
    expect(first.hit).toBe(false);
    expect(again).toMatchObject({ hit: true, dataset: { id: first.dataset.id } });
    const other = await cacheOf(fx.ws, { kind: 'npy', path: p, field: 'x' }, 'hit', 8192);
    expect(other.hit).toBe(false);
    expect(other.dataset.id).not.toBe(first.dataset.id);
  });

  it('stores per-field statistics for normalisation', async () => {
    const p = file('stats.npy', npyBytes('|u1', [4], Uint8Array.from([0, 10, 20, 30])));
    const built = await cacheOf(fx.ws, { kind: 'npy', path: p, field: 'x' }, 'stats');
    expect(built.dataset.fields[0].stats).toEqual({ mean: 15, std: Math.sqrt(125), min: 0, max: 30 });
  });
});
