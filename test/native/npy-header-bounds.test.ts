// Tampered .npy, .npz and IDX headers: counts that cannot be counted, records of no values, brackets nested without
// end. Each is refused in words naming the file and the value, before a cache (or an inspection) takes its word.
import { readdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

import { describe, expect, it } from 'vitest';

import type { SourceSpec } from '../../src-main/api/datasets';
import { datasetsRoot } from '../../src-main/core/datasets/cache-store';
import { openSource } from '../../src-main/core/datasets/importers/open-source';
import { cacheOf, workspaceFixture } from '../helpers/datasets';
import { npyBytes, zipBytes } from '../helpers/numpy';

const fx = workspaceFixture();

/** .npy bytes (version 2) around a header dict written as given: headers np.save never writes. */
function npyDict(dict: string, data = new Uint8Array(0)): Buffer {
  const head = Buffer.alloc(12);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 2;
  head.writeUInt32LE(dict.length + 1, 8);
  return Buffer.concat([head, Buffer.from(`${dict}\n`, 'latin1'), data]);
}
const shaped = (shape: string) => npyDict(`{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`);

/** Inspecting and building both refuse with `message`; the build leaves nothing behind. */
async function refused(spec: SourceSpec, message: RegExp) {
  await expect(openSource(spec)).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringMatching(message) });
  const before = readdirSync(datasetsRoot(fx.ws));
  await expect(cacheOf(fx.ws, spec, 'bad')).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringMatching(message) });
  expect(readdirSync(datasetsRoot(fx.ws))).toEqual(before);
}

describe('tampered array headers are refused in words', () => {
  it('a 0 in the record shape: records of no values', async () => {
    const p = fx.file('z0.npy', shaped('(1000000000000, 0)'));
    await refused(
      { kind: 'npy', path: p, field: 'x' },
      /^\S*z0\.npy: the \.npy header's shape \(1000000000000, 0\) has a 0 after the record count, so its records hold no values; a dataset needs at least one value per record$/,
    );
  });

  it('a record count past 2^53, named with all its digits', async () => {
    const p = fx.file('unsafe.npy', shaped('(9007199254740993, 0, 5)'));
    await refused(
      { kind: 'npy', path: p, field: 'x' },
      /^\S*unsafe\.npy: the \.npy header's shape \(9007199254740993, 0, 5\) claims 9007199254740993 records, more than the 9007199254740991 that can be counted exactly: the header is damaged$/,
    );
  });

  it('a record count of 10^23', async () => {
    const p = fx.file('zfloat.npy', shaped('(100000000000000000000000, 0)'));
    await refused({ kind: 'npy', path: p, field: 'x' }, /zfloat\.npy: the \.npy header's shape \(100000000000000000000000, 0\) claims 100000000000000000000000 records, more than/);
  });

  it('a shape whose bytes pass 2^53', async () => {
    const p = fx.file('huge.npy', shaped('(4294967296, 4294967296)'));
    await refused({ kind: 'npy', path: p, field: 'x' }, /huge\.npy: the \.npy header's shape \(4294967296, 4294967296\) of 4-byte elements makes more bytes than any file holds \(over 2\^53\)/);
  });

  it('a structured member with a 0 in its shape', async () => {
    const p = fx.file('member0.npy', npyDict(`{'descr': [('a', '<f4', (0,))], 'fortran_order': False, 'shape': (1000,), }`));
    await refused({ kind: 'npy', path: p, field: 'x' }, /member0\.npy: member "a" has shape \[0\] in the \.npy header; its dimensions must be whole numbers from 1/);
  });

  it('brackets nested 400 000 deep', async () => {
    const deep = `{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': ${'['.repeat(400_000)}${']'.repeat(400_000)}}`;
    const p = fx.file('deep.npy', npyDict(deep));
    await refused({ kind: 'npy', path: p, field: 'x' }, /^\S*deep\.npy: bad \.npy header at character 92: brackets nested more than 32 deep \(a NumPy header nests 4 at most\): the file is damaged$/);
  });

  it('brackets nested 32 deep (the bound) still read', async () => {
    const p = fx.file('nested32.npy', npyDict(`{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': ${'['.repeat(31)}${']'.repeat(31)}}`, new Uint8Array(8)));
    expect((await openSource({ kind: 'npy', path: p, field: 'x' })).records).toBe(2);
  });

  it('an .npz array with a 0 in its record shape, compressed (no file size to check it against)', async () => {
    const p = fx.file('z0.npz', zipBytes([{ name: 'x.npy', data: npyBytes('<f4', [5, 0], new Uint8Array(0)) }], true));
    await refused({ kind: 'npz', path: p }, /z0\.npz:x\.npy: the \.npy header's shape \(5, 0\) has a 0 after the record count/);
  });

  it('a gzipped IDX file whose dimensions multiply past 2^53', async () => {
    const h = Buffer.alloc(4 + 4 * 5);
    h[2] = 0x08;
    h[3] = 5;
    [1, 65535, 65535, 65535, 65535].forEach((d, i) => h.writeUInt32BE(d, 4 + 4 * i));
    const p = fx.file('huge.idx.gz', gzipSync(Buffer.concat([h, Buffer.alloc(64)])));
    await refused(
      { kind: 'idx', files: [{ path: p, field: 'x' }] },
      /huge\.idx\.gz: the IDX dimensions 1x65535x65535x65535x65535 of uint8 make more bytes than any file holds \(over 2\^53\): the header is damaged/,
    );
  });
});
