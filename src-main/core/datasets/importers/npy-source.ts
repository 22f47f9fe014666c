import type { Readable } from 'node:stream';
import { createInflateRaw } from 'node:zlib';

import { DTYPE_BYTES } from '../../../api/datasets';
import { ApiError } from '../../../api/errors';
import { ByteStream } from './byte-stream';
import type { NpyHeader } from './npy-header';
import { npyHeaderBytes, npyLengthBytes, parseNpyHeader } from './npy-header';
import type { Chunk, RawFieldLayout, RecordSource, SourceField } from './record-source';
import { checkAborted, gatherMember, swapBytes } from './record-source';
import { sourceFileSize, openSourceStream } from './source-file';

/** Where an .npy stream lives: a whole file, or an entry of an .npz archive. */
export interface NpyLocation {
  file: string;
  /** Byte offset of the .npy data in the file (0 for a .npy file). */
  start: number;
  /** Stored bytes (compressed size for deflated entries). */
  length: number;
  deflated: boolean;
  /** Name used in messages, e.g. "data.npz:labels.npy". */
  label: string;
}

function openStream(loc: NpyLocation): ByteStream {
  const file = openSourceStream(loc.file, { start: loc.start, end: loc.start + loc.length - 1, highWaterMark: 1 << 20 });
  const stream: Readable = loc.deflated ? file.pipe(createInflateRaw()) : file;
  if (loc.deflated) file.on('error', (err) => stream.destroy(err));
  return new ByteStream(stream, loc.label, (err) => new ApiError('E_DATA', `${loc.label}: ${loc.deflated ? 'bad compressed data' : 'read failed'} (${err.message})`));
}

/** Smallest .npy: magic (6), version (2), a 2-byte header length. */
const NPY_MIN_BYTES = 10;

/** A format 3 header's text; bytes that are not UTF-8 are refused, as NumPy refuses them, not read as U+FFFD. */
function utf8Header(dict: Buffer, label: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(dict);
  } catch {
    throw new ApiError('E_DATA', `${label}: its .npy header (format 3) is not valid UTF-8`);
  }
}

export async function readNpyHeader(loc: NpyLocation): Promise<NpyHeader> {
  if (loc.length === 0) throw new ApiError('E_DATA', `${loc.label} is empty (0 bytes): it holds no .npy array`);
  if (!loc.deflated && loc.length < NPY_MIN_BYTES) throw new ApiError('E_DATA', `${loc.label} is ${loc.length} bytes: too short for a .npy header`);
  const stream = openStream(loc);
  try {
    const preamble = await stream.read(8, 'the .npy header');
    const lengthBytes = npyLengthBytes(preamble, loc.label);
    const headerBytes = npyHeaderBytes(await stream.read(lengthBytes, 'the .npy header'), loc.label, loc.deflated ? null : loc.length);
    const dict = await stream.read(headerBytes - 8 - lengthBytes, 'the .npy header');
    // Format 3 is format 2 with a UTF-8 header (names beyond Latin-1); 1 and 2 are Latin-1.
    return parseNpyHeader(preamble[6] === 3 ? utf8Header(dict, loc.label) : dict.toString('latin1'), headerBytes, loc.label);
  } finally {
    await stream.close();
  }
}

/**
 * A .npy array as a record source: a plain array is one field named
 * `plainField`, a structured array one field per member. Records are split out
 * of each struct while streaming, so memory stays bounded.
 */
export async function npySource(loc: NpyLocation, plainField: string): Promise<RecordSource> {
  const header = await readNpyHeader(loc);
  const plain = header.members.length === 1 && header.members[0].name === '';
  const fields: SourceField[] = header.members.map((m) =>
    plain ? { name: plainField, dtype: m.dtype, shape: header.recordShape } : { name: m.name, dtype: m.dtype, shape: [...header.recordShape, ...m.shape] },
  );
  const recordValues = header.recordShape.reduce((a, b) => a * b, 1);
  const recordBytes = header.itemBytes * recordValues;
  const dataBytes = header.records * recordBytes;
  if (!loc.deflated) {
    const available = loc.length - header.dataOffset;
    if (available < dataBytes) {
      throw new ApiError(
        'E_DATA',
        `${loc.label}: the header claims ${[header.records, ...header.recordShape].join('x')} elements of ${header.itemBytes} bytes (${dataBytes} bytes) but the file holds ${Math.max(0, available)} after its header`,
      );
    }
  }
  // A structured array with more axes than records (shape (N, 3)) interleaves each member across the record.
  const scattered = !plain && recordValues > 1;
  const memberBytes = header.members.map((m) => m.shape.reduce((a, b) => a * b, 1) * widthOf(m.dtype));
  return {
    kind: 'npy',
    description: loc.label,
    records: header.records,
    fields,
    files: [loc.file],
    sourceBytes: loc.length,
    options: { field: plainField, entry: loc.label },
    uncachedReason: loc.deflated
      ? `${loc.label} is compressed inside the archive, so its records cannot be read in place`
      : scattered
        ? `${loc.label} holds several structs per record, so a member's values are not contiguous and cannot be read in place`
        : null,
    rawLayout: (): RawFieldLayout[] | null =>
      loc.deflated || scattered
        ? null
        : header.members.map((m, i) => ({
            ...fields[i],
            file: loc.file,
            // Structured records are read member by member; plain ones whole.
            byteOffset: loc.start + header.dataOffset + m.offset,
            byteStride: plain ? recordBytes : header.itemBytes,
            bigEndian: m.bigEndian,
          })),
    async *chunks(maxRecords, signal): AsyncGenerator<Chunk> {
      const stream = openStream(loc);
      try {
        await stream.read(header.dataOffset, 'the .npy header');
        for (let done = 0; done < header.records; ) {
          checkAborted(signal);
          const n = Math.min(maxRecords, header.records - done);
          const raw = await stream.read(n * recordBytes, `record ${done + n - 1}`);
          const out = header.members.map((m, f) => {
            const width = widthOf(m.dtype);
            if (plain) {
              const copy = new Uint8Array(raw);
              if (m.bigEndian) swapBytes(copy, width);
              return copy;
            }
            // Gather one member out of every struct (records x sub-elements).
            const bytes = gatherMember(raw, n * recordValues, header.itemBytes, m.offset, memberBytes[f]);
            if (m.bigEndian) swapBytes(bytes, width);
            return bytes;
          });
          yield { count: n, fields: out };
          done += n;
        }
      } finally {
        await stream.close();
      }
    },
  };
}

const widthOf = (dtype: SourceField['dtype']): number => DTYPE_BYTES[dtype];

export async function npyFileSource(path: string, field: string): Promise<RecordSource> {
  const length = await sourceFileSize(path);
  return npySource({ file: path, start: 0, length, deflated: false, label: path }, field);
}
