import { ApiError } from '../../../api/errors';
import type { CacheDType } from '../../../api/datasets';
import { DTYPE_BYTES } from '../../../api/datasets';

export interface SourceField {
  name: string;
  dtype: CacheDType;
  /** Per-record shape; [] is one value. */
  shape: number[];
  /** Class names when the source held text labels (stored as indices into this list). */
  classes?: string[];
}

/** Consecutive records: for each field (in `fields` order) `count` records packed, little-endian. */
export interface Chunk {
  count: number;
  fields: Uint8Array[];
}

/** Where the native loader finds a field's records in a source file (the uncached path). */
export interface RawFieldLayout extends SourceField {
  file: string;
  byteOffset: number;
  byteStride: number;
  bigEndian: boolean;
}

/**
 * A dataset source read by streaming: never the whole file in memory.
 * Every importer produces one of these; the cache builder consumes it.
 */
export interface RecordSource {
  readonly kind: string;
  readonly description: string;
  readonly records: number;
  readonly fields: SourceField[];
  /** Files read, for the fingerprint and the manifest. */
  readonly files: string[];
  /** Bytes that will be read from the sources, for progress. */
  readonly sourceBytes: number;
  /** Import options that change the records, for the fingerprint. */
  readonly options: unknown;
  /** Yields chunks of at most maxRecords records, in order, until `records` are out. */
  chunks(maxRecords: number, signal?: AbortSignal): AsyncGenerator<Chunk>;
  /** Null when the records cannot be read in place (compressed, text, generated). */
  rawLayout(): RawFieldLayout[] | null;
  /** Why rawLayout() is null, in words. */
  readonly uncachedReason: string | null;
}

export const recordValues = (f: { shape: number[] }) => f.shape.reduce((a, b) => a * b, 1);
export const recordBytes = (f: { dtype: CacheDType; shape: number[] }) => recordValues(f) * DTYPE_BYTES[f.dtype];

export function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ApiError('E_CANCELLED', 'the import was cancelled');
}

/**
 * Copies one member out of `count` consecutive interleaved items (structured
 * arrays, record dumps): `memberBytes` bytes at `offset` of every `itemBytes`.
 */
export function gatherMember(items: Uint8Array, count: number, itemBytes: number, offset: number, memberBytes: number): Uint8Array {
  const out = new Uint8Array(count * memberBytes);
  for (let e = 0; e < count; e++) out.set(items.subarray(e * itemBytes + offset, e * itemBytes + offset + memberBytes), e * memberBytes);
  return out;
}

/** Reverses byte order in place of every `width`-byte value (big-endian sources). */
export function swapBytes(bytes: Uint8Array, width: number): void {
  if (width === 1) return;
  for (let i = 0; i < bytes.length; i += width) bytes.subarray(i, i + width).reverse();
}

/**
 * Several single- or multi-field sources read side by side as one (images
 * from one file, labels from another). Record counts must agree.
 */
export function zipSources(kind: string, description: string, parts: RecordSource[], options: unknown): RecordSource {
  const records = parts[0].records;
  for (const p of parts) {
    if (p.records !== records) {
      throw new ApiError(
        'E_DATA',
        `mismatched field lengths: ${parts[0].description} has ${records} records but ${p.description} has ${p.records}`,
      );
    }
  }
  const fields = parts.flatMap((p) => p.fields);
  const seen = new Set<string>();
  for (const f of fields) {
    if (seen.has(f.name)) throw new ApiError('E_BAD_INPUT', `field '${f.name}' is given twice`);
    seen.add(f.name);
  }
  const layouts = parts.map((p) => p.rawLayout());
  const missing = parts.find((p, i) => layouts[i] === null);
  return {
    kind,
    description,
    records,
    fields,
    files: parts.flatMap((p) => p.files),
    sourceBytes: parts.reduce((a, p) => a + p.sourceBytes, 0),
    options,
    uncachedReason: missing ? missing.uncachedReason : null,
    rawLayout: () => (missing ? null : layouts.flatMap((l) => l ?? [])),
    async *chunks(maxRecords, signal) {
      const iterators = parts.map((p) => p.chunks(maxRecords, signal));
      try {
        for (;;) {
          const results = await Promise.all(iterators.map((it) => it.next()));
          if (results.every((r) => r.done)) return;
          if (results.some((r) => r.done)) throw new ApiError('E_DATA', 'mismatched field lengths: one source ended early');
          const chunks = results.map((r) => r.value as Chunk);
          const count = chunks[0].count;
          if (chunks.some((c) => c.count !== count)) throw new ApiError('E_INTERNAL', 'sources yielded chunks of different sizes');
          yield { count, fields: chunks.flatMap((c) => c.fields) };
        }
      } finally {
        await Promise.all(iterators.map((it) => it.return(undefined)));
      }
    },
  };
}

/**
 * Cuts a byte stream of fixed-size records into chunks of maxRecords records
 * (one field), the building block of the file importers.
 */
export async function* recordChunks(
  read: (n: number, what: string) => Promise<Uint8Array>,
  records: number,
  bytesPerRecord: number,
  maxRecords: number,
  signal: AbortSignal | undefined,
  convert?: (bytes: Uint8Array) => void,
): AsyncGenerator<Chunk> {
  for (let done = 0; done < records; ) {
    checkAborted(signal);
    const n = Math.min(maxRecords, records - done);
    const bytes = new Uint8Array(await read(n * bytesPerRecord, `record ${done + n - 1}`));
    convert?.(bytes);
    yield { count: n, fields: [bytes] };
    done += n;
  }
}
