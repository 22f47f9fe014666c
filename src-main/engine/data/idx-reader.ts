import { promises as fs } from 'node:fs';
import { gunzipSync } from 'node:zlib';

import { ApiError } from '../../api/errors';

/** IDX element types (http://yann.lecun.com/exdb/mnist/): code -> bytes per value and our dtype name. */
const IDX_TYPES: Record<number, { bytes: number; name: string }> = {
  0x08: { bytes: 1, name: 'uint8' },
  0x09: { bytes: 1, name: 'int8' },
  0x0b: { bytes: 2, name: 'int16' },
  0x0c: { bytes: 4, name: 'int32' },
  0x0d: { bytes: 4, name: 'float32' },
  0x0e: { bytes: 8, name: 'float64' },
};

/** The most we load into memory from one IDX file (the dataset cache streams larger sources). */
const MAX_IDX_BYTES = 2 ** 31;

export interface IdxArray {
  dims: number[];
  dtype: string;
  /** Raw big-endian values; for uint8 these are the values themselves. */
  data: Uint8Array;
}

function dataError(file: string, what: string): ApiError {
  return new ApiError('E_DATA', `${file}: ${what}`);
}

/** Parses an IDX file held in memory (already gunzipped). */
export function parseIdx(bytes: Uint8Array, file: string): IdxArray {
  if (bytes.length < 4) throw dataError(file, `is truncated: ${bytes.length} bytes, not even an IDX header`);
  if (bytes[0] !== 0 || bytes[1] !== 0) {
    const magic = Array.from(bytes.subarray(0, 4), (b) => b.toString(16).padStart(2, '0')).join(' ');
    throw dataError(file, `is not an IDX file: magic bytes are ${magic}, expected 00 00 <type> <dims>`);
  }
  const type = IDX_TYPES[bytes[2]];
  if (!type) throw dataError(file, `has unknown IDX element type 0x${bytes[2].toString(16)}`);
  const ndims = bytes[3];
  if (ndims < 1 || ndims > 4) throw dataError(file, `has ${ndims} dimensions; IDX files here have 1 to 4`);
  const headerBytes = 4 + 4 * ndims;
  if (bytes.length < headerBytes) throw dataError(file, `is truncated inside its header (${bytes.length} bytes)`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dims = Array.from({ length: ndims }, (_, i) => view.getUint32(4 + 4 * i, false));
  const expected = dims.reduce((a, b) => a * b, 1) * type.bytes;
  if (expected > MAX_IDX_BYTES) {
    throw dataError(file, `claims ${dims.join('x')} values (${expected} bytes), more than ${MAX_IDX_BYTES} bytes we load in memory`);
  }
  const actual = bytes.length - headerBytes;
  if (actual < expected) {
    throw dataError(file, `is truncated: the header promises ${dims.join('x')} ${type.name} values (${expected} bytes) but the file holds ${actual}`);
  }
  if (actual > expected) throw dataError(file, `has ${actual - expected} bytes after the ${dims.join('x')} values it declares`);
  return { dims, dtype: type.name, data: bytes.subarray(headerBytes) };
}

/** Reads an IDX file, gzip-compressed or not (decided by the gzip magic bytes, not the name). */
export async function readIdx(file: string): Promise<IdxArray> {
  let raw: Buffer;
  try {
    raw = await fs.readFile(file);
  } catch (err) {
    throw new ApiError('E_BAD_INPUT', `cannot read ${file}: ${(err as Error).message}`);
  }
  let bytes: Uint8Array = raw;
  if (raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b) {
    try {
      bytes = gunzipSync(raw);
    } catch (err) {
      throw dataError(file, `is not a valid gzip stream (${(err as Error).message})`);
    }
  }
  return parseIdx(bytes, file);
}
