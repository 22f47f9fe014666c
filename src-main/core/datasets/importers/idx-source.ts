import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

import type { CacheDType } from '../../../api/datasets';
import { ApiError } from '../../../api/errors';
import { ByteStream } from './byte-stream';
import { sourceFileSize, openSourceStream } from './source-file';
import type { RecordSource } from './record-source';
import { recordChunks, swapBytes } from './record-source';

/** IDX element types (the MNIST format): code -> our dtype. */
const IDX_TYPES: Record<number, CacheDType> = { 0x08: 'uint8', 0x09: 'int8', 0x0b: 'int16', 0x0c: 'int32', 0x0d: 'float32', 0x0e: 'float64' };
const WIDTH: Record<string, number> = { uint8: 1, int8: 1, int16: 2, int32: 4, float32: 4, float64: 8 };

async function isGzip(path: string): Promise<boolean> {
  const stream = openSourceStream(path, { start: 0, end: 1 });
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  const head = Buffer.concat(chunks);
  return head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
}

function open(path: string, gz: boolean): ByteStream {
  const file = openSourceStream(path, { highWaterMark: 1 << 20 });
  const stream: Readable = gz ? file.pipe(createGunzip()) : file;
  if (gz) file.on('error', (err) => stream.destroy(err));
  return new ByteStream(stream, path, (err) =>
    gz ? new ApiError('E_DATA', `${path} is not a valid gzip stream (${err.message})`) : new ApiError('E_DATA', `${path}: ${err.message}`),
  );
}

interface IdxHeader {
  dtype: CacheDType;
  dims: number[];
  headerBytes: number;
}

async function readHeader(stream: ByteStream, path: string): Promise<IdxHeader> {
  const magic = await stream.read(4, 'the IDX header');
  if (magic[0] !== 0 || magic[1] !== 0) {
    const hex = Array.from(magic, (b) => b.toString(16).padStart(2, '0')).join(' ');
    throw new ApiError('E_DATA', `${path} is not an IDX file: magic bytes are ${hex}, expected 00 00 <type> <dims>`);
  }
  const dtype = IDX_TYPES[magic[2]];
  if (!dtype) throw new ApiError('E_DATA', `${path} has unknown IDX element type 0x${magic[2].toString(16)}`);
  const ndims = magic[3];
  if (ndims < 1 || ndims > 8) throw new ApiError('E_DATA', `${path} has ${ndims} dimensions; IDX files here have 1 to 8`);
  const dimBytes = await stream.read(4 * ndims, 'the IDX dimensions');
  const dims = Array.from({ length: ndims }, (_, i) => dimBytes.readUInt32BE(4 * i));
  if (dims.some((d) => d === 0)) throw new ApiError('E_DATA', `${path} has a zero dimension (${dims.join('x')})`);
  // Eight 32-bit dimensions multiply past 2^53, where sizes stop counting exactly (and a gzip file has no size to check).
  if (!Number.isSafeInteger(dims.reduce((a, b) => a * b, WIDTH[dtype]))) {
    throw new ApiError('E_DATA', `${path}: the IDX dimensions ${dims.join('x')} of ${dtype} make more bytes than any file holds (over 2^53): the header is damaged`);
  }
  return { dtype, dims, headerBytes: 4 + 4 * ndims };
}

/** One IDX file as one field: the first dimension counts records. */
export async function idxSource(path: string, field: string): Promise<RecordSource> {
  const sourceBytes = await sourceFileSize(path);
  const gz = await isGzip(path);
  const probe = open(path, gz);
  const header = await readHeader(probe, path).finally(() => probe.close());
  const [records, ...shape] = header.dims;
  const width = WIDTH[header.dtype];
  const bytesPerRecord = shape.reduce((a, b) => a * b, 1) * width;
  if (!gz) {
    const expected = header.headerBytes + records * bytesPerRecord;
    if (sourceBytes < expected) {
      throw new ApiError('E_DATA', `${path} is truncated: the header promises ${header.dims.join('x')} ${header.dtype} values (${expected - header.headerBytes} bytes) but the file holds ${sourceBytes - header.headerBytes}`);
    }
  }
  return {
    kind: 'idx',
    description: path,
    records,
    fields: [{ name: field, dtype: header.dtype, shape }],
    files: [path],
    sourceBytes,
    options: { field },
    uncachedReason: gz ? `${path} is gzip-compressed, so its records cannot be read in place` : null,
    rawLayout: () =>
      gz
        ? null
        : [{ name: field, dtype: header.dtype, shape, file: path, byteOffset: header.headerBytes, byteStride: bytesPerRecord, bigEndian: width > 1 }],
    async *chunks(maxRecords, signal) {
      const stream = open(path, gz);
      try {
        await readHeader(stream, path);
        yield* recordChunks((n, what) => stream.read(n, what), records, bytesPerRecord, maxRecords, signal, (b) => swapBytes(b, width));
        if (!(await stream.atEnd())) throw new ApiError('E_DATA', `${path} has bytes after the ${header.dims.join('x')} values it declares`);
      } finally {
        await stream.close();
      }
    },
  };
}
