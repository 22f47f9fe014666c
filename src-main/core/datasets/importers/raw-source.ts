import { createReadStream } from 'node:fs';

import type { CacheDType } from '../../../api/datasets';
import { ApiError } from '../../../api/errors';
import { ByteStream } from './byte-stream';
import type { RecordSource } from './record-source';
import { recordBytes, recordChunks, zipSources } from './record-source';
import { sourceFileSize } from './source-file';

export interface RawFile {
  path: string;
  field: string;
  dtype: CacheDType;
  shape: number[];
}

/** A headerless dump (ndarray.tofile(), often misnamed .npy): the dtype and per-record shape are the user's word. */
export async function rawFileSource(spec: RawFile): Promise<RecordSource> {
  const size = await sourceFileSize(spec.path);
  const bytes = recordBytes(spec);
  if (size === 0 || size % bytes !== 0) {
    throw new ApiError(
      'E_DATA',
      `${spec.path} is ${size} bytes, not a whole number of ${spec.dtype} records of shape [${spec.shape.join(', ')}] (${bytes} bytes each): check the dtype and shape`,
    );
  }
  const records = size / bytes;
  return {
    kind: 'raw',
    description: spec.path,
    records,
    fields: [{ name: spec.field, dtype: spec.dtype, shape: spec.shape }],
    files: [spec.path],
    sourceBytes: size,
    options: spec,
    uncachedReason: null,
    rawLayout: () => [{ name: spec.field, dtype: spec.dtype, shape: spec.shape, file: spec.path, byteOffset: 0, byteStride: bytes, bigEndian: false }],
    async *chunks(maxRecords, signal) {
      const stream = new ByteStream(createReadStream(spec.path, { highWaterMark: 1 << 20 }), spec.path);
      try {
        yield* recordChunks((n, what) => stream.read(n, what), records, bytes, maxRecords, signal);
      } finally {
        await stream.close();
      }
    },
  };
}

export async function rawSource(files: RawFile[]): Promise<RecordSource> {
  const parts = await Promise.all(files.map(rawFileSource));
  return parts.length === 1 ? parts[0] : zipSources('raw', files.map((f) => f.path).join(', '), parts, files);
}
