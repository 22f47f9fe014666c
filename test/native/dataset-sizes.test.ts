// Attack round 8, finding 1: a few bytes of a planted or uploaded source made datasets.inspect allocate what its header
// claimed: a sparse .npy of 5 records of 200 MB (4 KB on disk), a 978 KB deflated .npz of the same, a gzipped IDX, or an
// .npz whose zip directory claims 1 GB. RSS went to 3-6 GB. Records are now at most 64 MiB, a preview reads at most
// 4 MiB (one record at least), previews run one at a time, and an .npz's directory is at most 16 MiB and 1,024 arrays.
import { closeSync, openSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Services } from '../../src-main/core/services';
import { npyBytes, zipBytes } from '../helpers/numpy';
import { testServices } from '../helpers/services';

let services: Services;
let cleanup: () => Promise<void>;
beforeAll(async () => ({ services, cleanup } = await testServices()));
afterAll(async () => cleanup?.());

const src = (name: string) => path.join(services.workspace.root, 'sources', name);
const inspect = (source: object) => services.router.dispatch('datasets.inspect', { source });
type Inspected = { records: number; preview: Record<string, number[]>[] };

describe('a source whose header claims huge records', () => {
  it('a sparse .npy of 5 records of 200 MB is refused from its header, naming the record size and the limit', async () => {
    // The header only: the data is a hole (4 KB on disk), as a planted file's would be.
    writeFileSync(src('sparse.npy'), npyBytes('|u1', [5, 200_000_000], new Uint8Array(0)));
    truncateSync(src('sparse.npy'), 1_000_000_128);
    await expect(inspect({ kind: 'npy', path: 'sources/sparse.npy', field: 'x' })).rejects.toMatchObject({
      code: 'E_DATA',
      message: expect.stringMatching(/sources\/sparse\.npy: one record is 200000000 bytes \(x 200000000 uint8\), more than the 64 MiB a record may hold$/),
    });
    await expect(services.router.dispatch('datasets.build', { source: { kind: 'npy', path: 'sources/sparse.npy', field: 'x' }, name: 'sparse' })).rejects.toMatchObject({ code: 'E_DATA' });
  });

  it('a deflated .npz and a gzipped IDX that inflate to 5 records of 200 MB are refused before anything is inflated', async () => {
    const header = npyBytes('|u1', [5, 200_000_000], new Uint8Array(0));
    writeFileSync(src('bomb.npz'), zipBytes([{ name: 'x.npy', data: Buffer.concat([header, Buffer.alloc(1 << 20)]) }], true));
    await expect(inspect({ kind: 'npz', path: 'sources/bomb.npz' })).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringContaining('one record is 200000000 bytes (x 200000000 uint8), more than the 64 MiB') });
    // IDX: magic 0x00000803 (unsigned bytes, 3 dimensions) 5 x 20000 x 10000.
    const idx = Buffer.alloc(16);
    idx.writeUInt32BE(0x00000803, 0);
    idx.writeUInt32BE(5, 4);
    idx.writeUInt32BE(20000, 8);
    idx.writeUInt32BE(10000, 12);
    writeFileSync(src('bomb-idx3-ubyte.gz'), gzipSync(Buffer.concat([idx, Buffer.alloc(1 << 20)])));
    await expect(inspect({ kind: 'idx', files: [{ path: 'sources/bomb-idx3-ubyte.gz', field: 'x' }] })).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringContaining('more than the 64 MiB a record may hold') });
  });

  it('previews one record, not five, when records are 8 MB, and several previews at once all answer', async () => {
    // 5 records of 2M float32 (8 MB each), deflated: 40 MB of zeros in a few KB. Values 0.. in the first record.
    const first = new Float32Array(2_000_000).map((_, i) => (i < 16 ? i : 0));
    const data = Buffer.concat([Buffer.from(first.buffer), Buffer.alloc(4 * 8_000_000)]);
    writeFileSync(src('big.npz'), zipBytes([{ name: 'v.npy', data: npyBytes('<f4', [5, 2_000_000], data) }], true));
    const answers = (await Promise.all(Array.from({ length: 4 }, () => inspect({ kind: 'npz', path: 'sources/big.npz' })))) as Inspected[];
    for (const a of answers) {
      expect(a.records).toBe(5);
      expect(a.preview).toEqual([{ v: [0, 1, 2, 3, 4, 5, 6, 7] }]);
    }
  });
});

describe('an .npz whose zip directory claims too much', () => {
  it('a sparse 1 GiB .npz whose directory claims all of it is refused without reading it', async () => {
    const size = 1 << 30;
    const fd = openSync(src('directory.npz'), 'w');
    const eocd = Buffer.alloc(22);
    eocd.writeUInt32LE(0x06054b50, 0);
    eocd.writeUInt16LE(1, 8);
    eocd.writeUInt16LE(1, 10);
    eocd.writeUInt32LE(size - 22, 12); // directory size: the whole file
    eocd.writeUInt32LE(0, 16); // at offset 0
    writeSync(fd, eocd, 0, 22, size - 22);
    closeSync(fd);
    await expect(inspect({ kind: 'npz', path: 'sources/directory.npz' })).rejects.toMatchObject({
      code: 'E_DATA',
      message: expect.stringMatching(new RegExp(`sources/directory\\.npz: its zip directory claims 1 entries in ${size - 22} bytes, more than the 16 MiB an \\.npz's directory may take$`)),
    });
  });

  it('an .npz of 1,025 arrays is refused, naming the count and the limit', async () => {
    const one = npyBytes('<f4', [2], Buffer.from(new Float32Array([1, 2]).buffer));
    writeFileSync(src('many.npz'), zipBytes(Array.from({ length: 1025 }, (_, i) => ({ name: `a${i}.npy`, data: one })), false));
    await expect(inspect({ kind: 'npz', path: 'sources/many.npz' })).rejects.toMatchObject({
      code: 'E_DATA',
      message: expect.stringMatching(/sources\/many\.npz holds 1025 \.npy arrays; a dataset has at most 1024 fields$/),
    });
  });
});

// Re-attack 17: a zip directory that lies about its entries gave Node's own buffer errors (E_INTERNAL, no file named).
describe('an .npz whose zip directory lies', () => {
  const good = () => zipBytes([{ name: 'x.npy', data: npyBytes('<f4', [4, 3], Buffer.from(new Float32Array(12).buffer)) }, { name: 'y.npy', data: npyBytes('<i4', [4], Buffer.from(new Int32Array(4).buffer)) }], false);
  const eocdOf = (b: Buffer) => b.lastIndexOf(Buffer.from('PK\x05\x06', 'latin1'));
  const cdOf = (b: Buffer) => b.indexOf(Buffer.from('PK\x01\x02', 'latin1'));

  it.each([
    [
      'more entries than its directory holds',
      (b: Buffer) => {
        b.writeUInt16LE(5, eocdOf(b) + 8);
        b.writeUInt16LE(5, eocdOf(b) + 10);
        return b;
      },
      /sources\/lies\.npz: corrupt zip directory: entry 3 of the 5 it claims runs past its end \(\d+ bytes\)$/,
    ],
    [
      'an entry whose extra field runs past the directory',
      (b: Buffer) => {
        b.writeUInt16LE(60000, cdOf(b) + 30);
        return b;
      },
      /sources\/lies\.npz: corrupt zip directory: entry 1 of the 2 it claims runs past its end \(\d+ bytes\)$/,
    ],
    [
      'a zip64 locator that points past the end of the file',
      (b: Buffer) => {
        const e = eocdOf(b);
        const locator = Buffer.alloc(20);
        locator.writeUInt32LE(0x07064b50, 0);
        locator.writeBigUInt64LE(10n ** 12n, 8);
        locator.writeUInt32LE(1, 16);
        const out = Buffer.concat([b.subarray(0, e), locator, b.subarray(e)]);
        out.writeUInt32LE(0xffffffff, eocdOf(out) + 16);
        return out;
      },
      /sources\/lies\.npz: its zip64 locator points past the end of the file \(at 1000000000000 of \d+ bytes\)$/,
    ],
    [
      'a directory of 65,535 entries in 4 GiB, with no zip64 locator (re-attack 18: called a broken locator)',
      (b: Buffer) => {
        b.writeUInt16LE(0xffff, eocdOf(b) + 8);
        b.writeUInt16LE(0xffff, eocdOf(b) + 10);
        b.writeUInt32LE(0xfffffff0, eocdOf(b) + 12);
        b.writeUInt32LE(0, eocdOf(b) + 16);
        return b;
      },
      /sources\/lies\.npz is truncated: its central directory lies past the end of the file$/,
    ],
  ])('%s is refused in words naming the file', async (_, tamper, words) => {
    writeFileSync(src('lies.npz'), tamper(good()));
    await expect(inspect({ kind: 'npz', path: 'sources/lies.npz' })).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringMatching(words) });
  });
});

describe('an .npy of format 3 (a UTF-8 header)', () => {
  it('keeps a member name beyond Latin-1 as written, not as its UTF-8 bytes read one by one', async () => {
    const data = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);
    writeFileSync(src('utf8.npy'), npyBytes("[('température', '<f4'), ('δ', '<f4')]", [2], data, false, 3));
    const inspected = (await inspect({ kind: 'npy', path: 'sources/utf8.npy' })) as { fields: { name: string }[] };
    expect(inspected.fields.map((f) => f.name)).toEqual(['température', 'δ']);
    // A cache's field names are ASCII: the refusal says how to keep the file as it is (re-attack 18).
    await expect(services.router.dispatch('datasets.build', { source: { kind: 'npy', path: 'sources/utf8.npy' }, name: 'utf8' })).rejects.toMatchObject({
      code: 'E_BAD_INPUT',
      message: `field name "température" is not allowed: field names are letters, digits, _ . - and start with a letter or _; rename the source's field with a field map ("température" to another name)`,
    });
  });

  it('refuses a header that is not UTF-8, as NumPy does, rather than reading it with replacement characters (re-attack 18)', async () => {
    const data = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);
    const bytes = npyBytes("[('xQQ', '<f4'), ('y', '<f4')]", [2], data, false, 3);
    const at = bytes.indexOf('xQQ');
    bytes[at + 1] = 0xff;
    bytes[at + 2] = 0xfe;
    writeFileSync(src('notutf8.npy'), bytes);
    await expect(inspect({ kind: 'npy', path: 'sources/notutf8.npy' })).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringMatching(/sources\/notutf8\.npy: its \.npy header \(format 3\) is not valid UTF-8$/) });
  });
});
