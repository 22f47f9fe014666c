import { promises as fs } from 'node:fs';

import { ApiError } from '../../../api/errors';
import { excerpt } from './excerpt';
import { npySource, type NpyLocation } from './npy-source';
import { openSourceFile, sourceFileSize } from './source-file';
import type { RecordSource } from './record-source';
import { zipSources } from './record-source';

interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  localHeaderOffset: number;
}

async function readAt(fh: fs.FileHandle, offset: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  const { bytesRead } = await fh.read(buf, 0, length, offset);
  return buf.subarray(0, bytesRead);
}

/** A central directory's bytes at most: np.savez writes ~100 bytes an array; a larger one is a planted file, not read. */
const MAX_DIRECTORY_BYTES = 16 << 20;
/** Arrays in one archive at most: each is a field of the dataset, and each is opened to read its header. */
const MAX_ARRAYS = 1024;

/** The central directory of a zip file (with zip64 sizes and offsets, which np.savez writes for big arrays). */
async function zipEntries(fh: fs.FileHandle, size: number, file: string): Promise<ZipEntry[]> {
  const tailLength = Math.min(size, 65536 + 22);
  const tail = await readAt(fh, size - tailLength, tailLength);
  let eocd = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new ApiError('E_DATA', `${file} is not a zip archive (.npz): no end-of-central-directory record`);
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  // zip64: the locator sits just before the EOCD and points at the zip64 EOCD record. Without one, the values that
  // would send a reader there are the archive's own (as Python's zipfile reads them), checked as any others.
  const locator = eocd - 20;
  if ((cdOffset === 0xffffffff || count === 0xffff) && locator >= 0 && tail.readUInt32LE(locator) === 0x07064b50) {
    const z64At = Number(tail.readBigUInt64LE(locator + 8));
    if (z64At + 56 > size) throw new ApiError('E_DATA', `${file}: its zip64 locator points past the end of the file (at ${z64At} of ${size} bytes)`);
    const z64 = await readAt(fh, z64At, 56);
    if (z64.length < 56 || z64.readUInt32LE(0) !== 0x06064b50) throw new ApiError('E_DATA', `${file}: broken zip64 directory record`);
    count = Number(z64.readBigUInt64LE(32));
    cdSize = Number(z64.readBigUInt64LE(40));
    cdOffset = Number(z64.readBigUInt64LE(48));
  }
  if (cdOffset + cdSize > size) throw new ApiError('E_DATA', `${file} is truncated: its central directory lies past the end of the file`);
  if (cdSize > MAX_DIRECTORY_BYTES || count > MAX_DIRECTORY_BYTES / 46) {
    throw new ApiError('E_DATA', `${file}: its zip directory claims ${count} entries in ${cdSize} bytes, more than the ${MAX_DIRECTORY_BYTES >> 20} MiB an .npz's directory may take`);
  }
  const cd = await readAt(fh, cdOffset, cdSize);
  const entries: ZipEntry[] = [];
  let p = 0;
  // The directory's own counts and lengths are the file's words: each entry must lie inside it.
  const pastEnd = (e: number) => new ApiError('E_DATA', `${file}: corrupt zip directory: entry ${e + 1} of the ${count} it claims runs past its end (${cdSize} bytes)`);
  for (let e = 0; e < count; e++) {
    if (p + 46 > cd.length) throw pastEnd(e);
    if (cd.readUInt32LE(p) !== 0x02014b50) throw new ApiError('E_DATA', `${file}: corrupt central directory entry ${e}`);
    const method = cd.readUInt16LE(p + 10);
    let compressedSize = cd.readUInt32LE(p + 20);
    let uncompressedSize = cd.readUInt32LE(p + 24);
    const nameLength = cd.readUInt16LE(p + 28);
    const extraLength = cd.readUInt16LE(p + 30);
    const commentLength = cd.readUInt16LE(p + 32);
    let localHeaderOffset = cd.readUInt32LE(p + 42);
    if (p + 46 + nameLength + extraLength + commentLength > cd.length) throw pastEnd(e);
    const name = cd.subarray(p + 46, p + 46 + nameLength).toString('utf8');
    // zip64 extended information: 64-bit values for the fields that are 0xFFFFFFFF, in this order.
    let x = p + 46 + nameLength;
    const extraEnd = x + extraLength;
    while (x + 4 <= extraEnd) {
      const id = cd.readUInt16LE(x);
      const len = cd.readUInt16LE(x + 2);
      if (x + 4 + len > extraEnd) throw new ApiError('E_DATA', `${file}: corrupt zip directory: entry ${e + 1} has an extra field longer than its room`);
      if (id === 0x0001 && len >= 8 * [uncompressedSize, compressedSize, localHeaderOffset].filter((v) => v === 0xffffffff).length) {
        let q = x + 4;
        if (uncompressedSize === 0xffffffff) {
          uncompressedSize = Number(cd.readBigUInt64LE(q));
          q += 8;
        }
        if (compressedSize === 0xffffffff) {
          compressedSize = Number(cd.readBigUInt64LE(q));
          q += 8;
        }
        if (localHeaderOffset === 0xffffffff) localHeaderOffset = Number(cd.readBigUInt64LE(q));
      }
      x += 4 + len;
    }
    entries.push({ name, method, compressedSize, localHeaderOffset });
    p = extraEnd + commentLength;
  }
  return entries;
}

/** A NumPy .npz archive: one field per array, named after it; arrays must have the same number of records. */
export async function npzSource(path: string): Promise<RecordSource> {
  const size = await sourceFileSize(path);
  const fh = await openSourceFile(path);
  try {
    const entries = (await zipEntries(fh, size, path)).filter((e) => e.name.endsWith('.npy'));
    if (entries.length === 0) throw new ApiError('E_DATA', `${path} holds no .npy arrays`);
    if (entries.length > MAX_ARRAYS) throw new ApiError('E_DATA', `${path} holds ${entries.length} .npy arrays; a dataset has at most ${MAX_ARRAYS} fields`);
    const parts: RecordSource[] = [];
    for (const e of entries) {
      // Entry names are the archive's words: shown only as a clean excerpt.
      const entry = excerpt(e.name, 80);
      if (e.method !== 0 && e.method !== 8) {
        throw new ApiError('E_DATA', `${path}:${entry} uses zip compression method ${e.method}; only stored and deflated entries are supported`);
      }
      const local = await readAt(fh, e.localHeaderOffset, 30);
      if (local.length < 30 || local.readUInt32LE(0) !== 0x04034b50) throw new ApiError('E_DATA', `${path}:${entry}: corrupt local header`);
      const start = e.localHeaderOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
      if (start + e.compressedSize > size) throw new ApiError('E_DATA', `${path} is truncated inside ${entry}`);
      const loc: NpyLocation = { file: path, start, length: e.compressedSize, deflated: e.method === 8, label: `${path}:${entry}` };
      parts.push(await npySource(loc, e.name.replace(/\.npy$/, '')));
    }
    return zipSources('npz', path, parts, { entries: entries.map((e) => e.name) });
  } finally {
    await fh.close();
  }
}
