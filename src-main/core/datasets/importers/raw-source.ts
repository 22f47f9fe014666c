import type { RawFieldFile, RawRecordFile } from '../../../api/datasets';
import { ApiError } from '../../../api/errors';
import { ByteStream } from './byte-stream';
import { formatRecordLayout, placeMembers } from './record-layout';
import type { RecordSource } from './record-source';
import { checkAborted, gatherMember, recordBytes, recordChunks, zipSources } from './record-source';
import { sourceFileSize, openSourceStream } from './source-file';

const openDump = (path: string) => new ByteStream(openSourceStream(path, { highWaterMark: 1 << 20 }), path);

/** A headerless dump (ndarray.tofile(), often misnamed .npy): the dtype and per-record shape are the user's word. */
export async function rawFileSource(spec: RawFieldFile): Promise<RecordSource> {
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
      const stream = openDump(spec.path);
      try {
        yield* recordChunks((n, what) => stream.read(n, what), records, bytes, maxRecords, signal);
      } finally {
        await stream.close();
      }
    },
  };
}

/**
 * A headerless dump of interleaved records (a structured array's tofile()):
 * one field per member. The loader reads each member in place, one record
 * size apart, so no copy of the data is needed to compare against the cache.
 */
export async function rawRecordSource(spec: RawRecordFile): Promise<RecordSource> {
  const seen = new Set<string>();
  for (const m of spec.record) {
    if (seen.has(m.name)) throw new ApiError('E_BAD_INPUT', `${spec.path}: field '${m.name}' is given twice in the record layout`);
    seen.add(m.name);
  }
  const size = await sourceFileSize(spec.path);
  const { members, recordSize } = placeMembers(spec.record);
  if (size === 0 || size % recordSize !== 0) {
    throw new ApiError(
      'E_DATA',
      `${spec.path} is ${size} bytes, not a whole number of ${recordSize}-byte records (${formatRecordLayout(spec.record)}): check the record layout`,
    );
  }
  const records = size / recordSize;
  return {
    kind: 'raw',
    description: spec.path,
    records,
    fields: spec.record.map(({ name, dtype, shape }) => ({ name, dtype, shape })),
    files: [spec.path],
    sourceBytes: size,
    options: spec,
    uncachedReason: null,
    rawLayout: () =>
      members.map((m) => ({ name: m.name, dtype: m.dtype, shape: m.shape, file: spec.path, byteOffset: m.offset, byteStride: recordSize, bigEndian: false })),
    async *chunks(maxRecords, signal) {
      const stream = openDump(spec.path);
      try {
        for (let done = 0; done < records; ) {
          checkAborted(signal);
          const n = Math.min(maxRecords, records - done);
          const raw = await stream.read(n * recordSize, `record ${done + n - 1}`);
          yield { count: n, fields: members.map((m) => gatherMember(raw, n, recordSize, m.offset, m.bytes)) };
          done += n;
        }
      } finally {
        await stream.close();
      }
    },
  };
}

export async function rawSource(files: (RawFieldFile | RawRecordFile)[]): Promise<RecordSource> {
  const parts = await Promise.all(files.map((f) => ('record' in f ? rawRecordSource(f) : rawFileSource(f))));
  return parts.length === 1 ? parts[0] : zipSources('raw', files.map((f) => f.path).join(', '), parts, files);
}
