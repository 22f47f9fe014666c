// A streaming zip writer (PKWARE APPNOTE 6.3, no ZIP64): each entry is deflated as it is read and
// written at once, its CRC-32 and sizes following it in a data descriptor, so nothing is buffered
// beyond the streams' own chunks; only the central directory (a few dozen bytes an entry) is kept.
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32, createDeflateRaw } from 'node:zlib';

import { printable } from '../../api/shell-word';

/** Without ZIP64 a zip's offsets and sizes are 32-bit, and it holds at most 65,535 entries. */
export const MAX_ZIP_BYTES = 0xffff_ffff;
export const MAX_ZIP_ENTRIES = 0xffff;

const LOCAL_HEADER = 0x04034b50;
const DATA_DESCRIPTOR = 0x08074b50;
const CENTRAL_HEADER = 0x02014b50;
const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
/** Bit 3: sizes and CRC follow the data; bit 11: the name is UTF-8. */
const FLAGS = 0x0008 | 0x0800;
const DEFLATE = 8;
const VERSION_NEEDED = 20;
/** Made by Unix (3), so the external attributes carry a file mode. */
const VERSION_MADE_BY = (3 << 8) | VERSION_NEEDED;
const REGULAR_FILE_MODE = 0o100644;

interface CentralEntry {
  name: Buffer;
  time: number;
  date: number;
  crc: number;
  compressed: number;
  size: number;
  offset: number;
}

/** MS-DOS time and date (local time, 2-second resolution, 1980 to 2107), as zip stores them. */
export function dosDateTime(when: Date): { time: number; date: number } {
  const year = Math.min(2107, Math.max(1980, when.getFullYear()));
  const early = when.getFullYear() < 1980;
  return {
    time: early ? 0 : (when.getHours() << 11) | (when.getMinutes() << 5) | Math.floor(when.getSeconds() / 2),
    date: early ? (1 << 5) | 1 : ((year - 1980) << 9) | ((when.getMonth() + 1) << 5) | when.getDate(),
  };
}

/** An entry name: relative, '/'-separated, no '.' or '..' part, no backslash or control character. */
export function checkEntryName(name: string): void {
  if (!isZipEntryName(name)) throw new Error(`${JSON.stringify(name)} is not a zip entry name (relative, '/'-separated, no '.' or '..' parts)`);
}

/**
 * Relative, '/'-separated, no empty, '.' or '..' part, no backslash (a separator on Windows), and nothing printable()
 * would escape: a name with a bidi mark or an invisible character unpacks as one that reads as another (re-attack 11:
 * `note<U+202E>txt.exe` showed as `noteexe.txt`).
 */
export function isZipEntryName(name: string): boolean {
  const parts = name.split('/');
  return !(!name || name.length > 1024 || name.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..') || name.includes('\\') || printable(name) !== name);
}

export interface ZipWriterOptions {
  /** How long a write may wait for the reader to take more before the zip is abandoned. */
  stallMs?: number;
  /** zlib level, 1 (fast) to 9 (small). */
  level?: number;
}

/** What one entry took: its bytes read and written. */
export interface ZipEntryWritten {
  name: string;
  bytes: number;
  compressed: number;
}

/**
 * Writes a zip into `sink` entry by entry, honouring its backpressure. A failure mid-entry leaves a
 * truncated zip: the caller ends the sink as failed (destroys the response), it is never finished.
 */
export class ZipWriter {
  private offset = 0;
  private readonly entries: CentralEntry[] = [];
  private finished = false;

  constructor(
    private readonly sink: Writable,
    private readonly options: ZipWriterOptions = {},
  ) {}

  /** Bytes written so far. */
  get bytesWritten(): number {
    return this.offset;
  }

  /** Deflates `source` into the zip as `name`, as it is read. */
  async addFile(name: string, source: Readable | Iterable<Buffer> | AsyncIterable<Buffer>, modified: Date): Promise<ZipEntryWritten> {
    if (this.finished) throw new Error('the zip is finished');
    checkEntryName(name);
    if (this.entries.length >= MAX_ZIP_ENTRIES) throw new Error(`a zip holds at most ${MAX_ZIP_ENTRIES} entries`);
    const nameBytes = Buffer.from(name, 'utf8');
    const { time, date } = dosDateTime(modified);
    const offset = this.offset;

    const header = Buffer.alloc(30);
    header.writeUInt32LE(LOCAL_HEADER, 0);
    header.writeUInt16LE(VERSION_NEEDED, 4);
    header.writeUInt16LE(FLAGS, 6);
    header.writeUInt16LE(DEFLATE, 8);
    header.writeUInt16LE(time, 10);
    header.writeUInt16LE(date, 12);
    // CRC-32 and both sizes (14..25) stay 0: they follow the data in its descriptor.
    header.writeUInt16LE(nameBytes.length, 26);
    header.writeUInt16LE(0, 28);
    await this.write(Buffer.concat([header, nameBytes]));

    let crc = 0;
    let size = 0;
    let compressed = 0;
    const write = (chunk: Buffer) => this.write(chunk);
    await pipeline(
      source instanceof Readable ? source : Readable.from(source),
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          crc = crc32(chunk, crc);
          size += chunk.length;
          yield chunk;
        }
      },
      createDeflateRaw({ level: this.options.level ?? 6 }),
      async (deflated: AsyncIterable<Buffer>) => {
        for await (const chunk of deflated) {
          compressed += chunk.length;
          await write(chunk);
        }
      },
    );
    if (size > MAX_ZIP_BYTES || compressed > MAX_ZIP_BYTES) throw new Error(`${name} is larger than a zip without ZIP64 holds`);

    const descriptor = Buffer.alloc(16);
    descriptor.writeUInt32LE(DATA_DESCRIPTOR, 0);
    descriptor.writeUInt32LE(crc >>> 0, 4);
    descriptor.writeUInt32LE(compressed, 8);
    descriptor.writeUInt32LE(size, 12);
    await this.write(descriptor);
    this.entries.push({ name: nameBytes, time, date, crc: crc >>> 0, compressed, size, offset });
    return { name, bytes: size, compressed };
  }

  /** Writes the central directory and its end record; the sink is left for the caller to end. */
  async finish(): Promise<number> {
    if (this.finished) throw new Error('the zip is finished');
    this.finished = true;
    const start = this.offset;
    for (const e of this.entries) {
      const h = Buffer.alloc(46);
      h.writeUInt32LE(CENTRAL_HEADER, 0);
      h.writeUInt16LE(VERSION_MADE_BY, 4);
      h.writeUInt16LE(VERSION_NEEDED, 6);
      h.writeUInt16LE(FLAGS, 8);
      h.writeUInt16LE(DEFLATE, 10);
      h.writeUInt16LE(e.time, 12);
      h.writeUInt16LE(e.date, 14);
      h.writeUInt32LE(e.crc, 16);
      h.writeUInt32LE(e.compressed, 20);
      h.writeUInt32LE(e.size, 24);
      h.writeUInt16LE(e.name.length, 28);
      // extra (30), comment (32), disk (34), internal attributes (36) stay 0.
      h.writeUInt32LE((REGULAR_FILE_MODE << 16) >>> 0, 38);
      h.writeUInt32LE(e.offset, 42);
      await this.write(Buffer.concat([h, e.name]));
    }
    const end = Buffer.alloc(22);
    end.writeUInt32LE(END_OF_CENTRAL_DIRECTORY, 0);
    end.writeUInt16LE(this.entries.length, 8);
    end.writeUInt16LE(this.entries.length, 10);
    end.writeUInt32LE(this.offset - start, 12);
    end.writeUInt32LE(start, 16);
    await this.write(end);
    return this.offset;
  }

  private async write(chunk: Buffer): Promise<void> {
    if (this.offset + chunk.length > MAX_ZIP_BYTES) throw new Error('the zip would pass 4 GiB, more than a zip without ZIP64 holds');
    if (this.sink.destroyed || this.sink.writableEnded) throw new Error('the download was closed before the zip was written');
    this.offset += chunk.length;
    if (!this.sink.write(chunk)) await drained(this.sink, this.options.stallMs ?? 60_000);
  }
}

/** Resolves when the sink wants more; rejects when it closes or errors first, or takes more than stallMs. */
function drained(sink: Writable, stallMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      clearTimeout(timer);
      sink.off('drain', onDrain);
      sink.off('close', onClose);
      sink.off('error', onError);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = () => done();
    const onClose = () => done(new Error('the download was closed before the zip was written'));
    const onError = (err: Error) => done(err);
    const timer = setTimeout(() => done(new Error(`the reader took nothing for ${stallMs / 1000} s`)), stallMs);
    sink.on('drain', onDrain);
    sink.on('close', onClose);
    sink.on('error', onError);
  });
}
