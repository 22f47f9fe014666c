// Bad sources and damaged caches: each a clear error, and nothing published.
import { execFile } from 'node:child_process';
import { chmodSync, closeSync, promises as fs, mkdirSync, openSync, readdirSync, readFileSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';

import { describe, expect, it } from 'vitest';

import type { SourceSpec } from '../../src-main/api/datasets';
import { datasetsRoot, listDatasets, verifyDataset } from '../../src-main/core/datasets/cache-store';
import { buildCache } from '../../src-main/core/datasets/cache-builder';
import { openSource } from '../../src-main/core/datasets/importers/open-source';
import { cacheOf, workspaceFixture } from '../helpers/datasets';
import { loadAddon, thrown } from '../helpers/native';
import { npyBytes } from '../helpers/numpy';
import { REPO_ROOT } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

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

  it('an interleaved raw dump whose size is not a whole number of records', async () => {
    const p = file('odd-records.bin', new Uint8Array(40));
    const record = [{ name: 'features', dtype: 'uint8' as const, shape: [7] }, { name: 'policy', dtype: 'float16' as const, shape: [3] }, { name: 'value', dtype: 'float32' as const, shape: [] }];
    await refused({ kind: 'raw', files: [{ path: p, record }] }, /odd-records\.bin is 40 bytes, not a whole number of 17-byte records \(features:uint8:7,policy:float16:3,value:float32:\): check the record layout/);
  });

  it('an interleaved record layout that names a member twice', async () => {
    const p = file('twice.bin', new Uint8Array(8));
    await refused({ kind: 'raw', files: [{ path: p, record: [{ name: 'a', dtype: 'float32', shape: [] }, { name: 'a', dtype: 'float32', shape: [] }] }] }, /field 'a' is given twice/, 'E_BAD_INPUT');
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

describe('unusable files are named, with what is wrong', () => {
  it('an empty .npy', async () => {
    await refused({ kind: 'npy', path: file('empty.npy', new Uint8Array(0)), field: 'x' }, /empty\.npy is empty \(0 bytes\)/);
  });

  it('an .npy shorter than its magic and header length', async () => {
    await refused({ kind: 'npy', path: file('stub.npy', Buffer.from('\x93NUMPY\x01', 'latin1')), field: 'x' }, /stub\.npy is 7 bytes: too short for a \.npy header/);
  });

  it('a version 2 .npy whose header length is 2^31', async () => {
    const bytes = npyBytes('<f4', [2], new Uint8Array(8), false, 2);
    bytes.writeUInt32LE(2 ** 31, 8);
    await refused({ kind: 'npy', path: file('v2-huge.npy', bytes), field: 'x' }, /v2-huge\.npy: the \.npy header says it is 2147483648 bytes long, but the file is only \d+ bytes/);
  });

  it('a directory given as a CSV or as a raw dump', async () => {
    const dir = path.join(fx.dir, 'sources', 'a-folder.csv');
    mkdirSync(dir);
    await refused({ kind: 'csv', path: dir, label: 'y', labelDtype: 'int32' }, /cannot read .*a-folder\.csv: it is a directory, not a file/, 'E_BAD_INPUT');
    await refused({ kind: 'raw', files: [{ path: dir, field: 'x', dtype: 'uint8', shape: [] }] }, /cannot read .*a-folder\.csv: it is a directory, not a file/, 'E_BAD_INPUT');
    await refused({ kind: 'npy', path: dir, field: 'x' }, /cannot read .*a-folder\.csv: it is a directory, not a file/, 'E_BAD_INPUT');
  });

  it('a socket or a loop of links named as a source: what it is, not the errno (sixth re-attack of issue 41)', async () => {
    const sock = path.join(fx.dir, 'sources', 'sock.npy');
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    try {
      for (const spec of [{ kind: 'npy', path: sock, field: 'x' }, { kind: 'csv', path: sock, label: 'y', labelDtype: 'int32' }] as SourceSpec[]) {
        await refused(spec, /cannot read .*sock\.npy: it is a socket or a device, not a regular file; import from a file$/, 'E_BAD_INPUT');
      }
    } finally {
      server.close();
    }
    symlinkSync('loop-b.csv', path.join(fx.dir, 'sources', 'loop-a.csv'));
    symlinkSync('loop-a.csv', path.join(fx.dir, 'sources', 'loop-b.csv'));
    await refused({ kind: 'csv', path: path.join(fx.dir, 'sources', 'loop-a.csv'), label: 'y', labelDtype: 'int32' }, /cannot read .*loop-a\.csv: its path goes through links that loop; check the path$/, 'E_BAD_INPUT');
  });

  it('a file that does not exist', async () => {
    await refused({ kind: 'csv', path: path.join(fx.dir, 'sources', 'gone.csv'), label: 'y', labelDtype: 'int32' }, /cannot read .*gone\.csv: it does not exist/, 'E_BAD_INPUT');
  });

  // Root reads files whatever their mode, so the importer runs as `nobody` when the tests run as root.
  it.each(['csv', 'raw'] as const)('an unreadable %s file (mode 000)', async (kind) => {
    const t = tempDir();
    try {
      chmodSync(t.dir, 0o755);
      const p = path.join(t.dir, `locked.${kind}`);
      writeFileSync(p, 'a,y\n1,0\n');
      chmodSync(p, 0o000);
      const spec: SourceSpec = kind === 'csv' ? { kind, path: p, label: 'y', labelDtype: 'int32' } : { kind, files: [{ path: p, field: 'x', dtype: 'uint8', shape: [] }] };
      const entry = path.join(REPO_ROOT, 'dist', 'src-main', 'core', 'datasets', 'importers', 'open-source.js');
      const script = `require(${JSON.stringify(entry)}).openSource(JSON.parse(process.argv[1])).then(() => console.log('{}'), (e) => console.log(JSON.stringify({ code: e.code, message: e.message })))`;
      const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
      const { stdout } = await promisify(execFile)(process.execPath, ['-e', script, JSON.stringify(spec)], asNobody);
      expect(JSON.parse(stdout)).toEqual({ code: 'E_BAD_INPUT', message: expect.stringMatching(/cannot read .*locked\.(csv|raw): permission denied, this user cannot read it/) });
    } finally {
      t.cleanup();
    }
  });
});

describe('CSV lines and cells are bounded, and errors quote only a clean excerpt', () => {
  it('a 100 MB line without a newline is refused at the bound, naming the line', async () => {
    const p = path.join(fx.dir, 'sources', 'one-line.csv');
    const fd = openSync(p, 'w');
    writeSync(fd, 'a,label\n');
    const mib = Buffer.alloc(1 << 20, '7');
    for (let i = 0; i < 100; i++) writeSync(fd, mib);
    closeSync(fd);
    const before = readdirSync(datasetsRoot(fx.ws));
    const err = await cacheOf(fx.ws, { kind: 'csv', path: p, label: 'label', labelDtype: 'int32' }, 'bad').catch((e: Error & { code: string }) => e);
    expect(err).toMatchObject({ code: 'E_DATA', message: expect.stringMatching(/one-line\.csv line 2 is longer than 1 MiB/) });
    expect((err as Error).message.length).toBeLessThan(400);
    expect(readdirSync(datasetsRoot(fx.ws))).toEqual(before);
  });

  it('a header line without a newline: the bound holds before the header is parsed', async () => {
    const p = file('no-newline.csv', Buffer.alloc(3 << 20, 'x'));
    await refused({ kind: 'csv', path: p, label: 'label', labelDtype: 'int32' }, /no-newline\.csv line 1 is longer than 1 MiB/);
  });

  it('a cell longer than 64 KiB, naming the line and column', async () => {
    const p = file('long-cell.csv', Buffer.from(`a,label\n1,0\n${'9'.repeat(70_000)},1\n`));
    await refused({ kind: 'csv', path: p, label: 'label', labelDtype: 'int32' }, /long-cell\.csv line 3, column 'a' \(1\): the cell is longer than 64 KiB/);
  });

  it('control characters in a bad cell are escaped, and long cells cut short', async () => {
    const p = file('ctrl.csv', Buffer.from(`a,label\n1,0\n\x1b[2J\x07oops${'z'.repeat(500)},1\n`));
    const err = await cacheOf(fx.ws, { kind: 'csv', path: p, label: 'label', labelDtype: 'int32' }, 'bad').catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'E_DATA', message: expect.stringContaining('ctrl.csv line 3, column \'a\' (1): "\\x1b[2J\\x07oopszzz') });
    // eslint-disable-next-line no-control-regex
    expect((err as Error).message).not.toMatch(/[\x00-\x1f\x7f-\x9f]/);
    expect((err as Error).message).toMatch(/zzz…" is not a number/);
    expect((err as Error).message.length).toBeLessThan(200);
  });

  it('a header with control characters and many columns: the column list is clean and short', async () => {
    const header = Array.from({ length: 5000 }, (_, i) => `c${i}\x1b]0;pwned\x07`).join(',');
    const p = file('ctrl-header.csv', Buffer.from(`${header}\n${'1,'.repeat(4999)}1\n`));
    const err = await cacheOf(fx.ws, { kind: 'csv', path: p, label: 'label', labelDtype: 'int32' }, 'bad').catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringMatching(/label column 'label' is not in .*ctrl-header\.csv \(columns: c0\\x1b\]0;pwned\\x07, c1.*, and 4990 more\)/) });
    // eslint-disable-next-line no-control-regex
    expect((err as Error).message).not.toMatch(/[\x00-\x1f\x7f-\x9f]/);
    expect((err as Error).message.length).toBeLessThan(600);
  });

  it('text labels with labelDtype float32 are refused with what to do', async () => {
    const p = file('text-regression.csv', Buffer.from('a,target\n1,high\n2,low\n'));
    await refused({ kind: 'csv', path: p, label: 'target', labelDtype: 'float32' }, /text-regression\.csv line 2, column 'target': "high" is not a number; text labels are classes: use labelDtype int32/);
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
