import { StringDecoder } from 'node:string_decoder';

import type { Workspace } from './workspace';
import { isMissing, MiB, type OpenedFile, openFile } from './workspace-files';

/**
 * Text in pieces to its lines: blank lines and lines over `maxLineBytes` dropped as they come (an over-long one is
 * never buffered whole), and with `skipFirst` the text up to the first newline (a line begun before the piece).
 */
class LineCutter {
  private rest = '';

  constructor(
    private readonly maxLineBytes: number,
    private skipping: boolean,
  ) {}

  /** The piece's whole lines, as one array: a file of millions of tiny lines is handed on a chunk at a time, not a line at a time. */
  push(text: string): string[] {
    const lines = (this.rest + text).split('\n');
    this.rest = lines.pop() ?? '';
    const out: string[] = [];
    for (const line of lines) {
      if (!this.skipping && line.trim() && line.length <= this.maxLineBytes) out.push(line);
      this.skipping = false;
    }
    if (this.rest.length > this.maxLineBytes) {
      this.rest = '';
      this.skipping = true;
    }
    return out;
  }

  /** The text after the last newline, when it is a line of its own (the end of the file, not a cut). */
  last(tail = ''): string[] {
    return !this.skipping && this.rest.trim() ? [this.rest + tail] : [];
  }
}

/** What a bounded read left out of a file too large to read whole: its size, what was read, and in words. */
export interface FileCut {
  /** The file, relative to the workspace. */
  file: string;
  sizeBytes: number;
  readBytes: number;
  /** For people: "runs/<id>/events.jsonl is 4.0 GiB, more than the 32.0 MiB read for an answer: 128 pieces of it were read, …". */
  note: string;
}

/**
 * A JSONL file's lines as jsonlLinesBounded reads them, in batches (one per chunk read: a line at a time through an
 * async generator cost a planted file of 22 million tiny lines 15 s), and what was left out (null: read whole).
 */
export interface BoundedLines {
  batches: AsyncIterable<string[]>;
  cut: FileCut | null;
}

/** One window of a bounded read: this many bytes at most, so a sample spans the file in many places. */
const WINDOW_BYTES = 256 * 1024;
/**
 * Bytes read from the file at a time: a chunk's lines are cut and sampled in one turn of the event loop. At 1 MiB,
 * 31 connections reading a 30 MB events file kept another window's models.list 3.7 s; at 256 KiB, 1.5 s.
 */
const CHUNK_BYTES = 256 * 1024;

const size = (b: number) => (b >= 2 ** 30 ? `${(b / 2 ** 30).toFixed(1)} GiB` : `${(b / MiB).toFixed(1)} MiB`);

/**
 * The lines of a JSONL file of the workspace, at most maxBytes of it read whatever its size (a planted
 * sparse file of a terabyte once took an hour to read whole): a file up to maxBytes whole, a larger one
 * in windows of WINDOW_BYTES spread evenly from its start to its end (the last one ends at its end, so
 * the newest lines are there), each without the lines its edges cut. Lines as jsonlLines says; the
 * file is read up to the size it had when opened. A missing file has no lines and no cut.
 */
export async function jsonlLinesBounded(workspace: Workspace, file: string, maxLineBytes: number, maxBytes: number): Promise<BoundedLines> {
  let opened;
  try {
    opened = await openFile(workspace, file);
  } catch (err) {
    if (isMissing(err)) return { batches: (async function* () {})(), cut: null };
    throw err;
  }
  const { handle, size: fileBytes, shown } = opened;
  const whole = fileBytes <= maxBytes;
  const count = whole ? 1 : Math.max(2, Math.floor(maxBytes / WINDOW_BYTES));
  const windowBytes = whole ? fileBytes : Math.floor(maxBytes / count);
  // Window i starts at i/(count-1) of the way to the last window's start: the first at 0, the last ending at the end.
  const starts = whole ? [0] : Array.from({ length: count }, (_, i) => Math.round((i * (fileBytes - windowBytes)) / (count - 1)));
  const cut = whole
    ? null
    : {
        file: shown,
        sizeBytes: fileBytes,
        readBytes: count * windowBytes,
        note: `${shown} is ${size(fileBytes)}, more than the ${size(maxBytes)} read for an answer: ${count} pieces of it were read, spread evenly from its start to its end, so what is shown is a sample`,
      };
  async function* batches(): AsyncGenerator<string[]> {
    try {
      for (const start of starts) yield* windowLines(handle, start, start + windowBytes, fileBytes, maxLineBytes);
    } finally {
      await handle.close();
    }
  }
  return { batches: batches(), cut };
}

/** The whole lines of bytes [start, end) of an open file, a batch per chunk read: a line the window's start or end cuts (unless at the file's own start or end) is left out. */
async function* windowLines(handle: OpenedFile['handle'], start: number, end: number, fileBytes: number, maxLineBytes: number): AsyncGenerator<string[]> {
  const decoder = new StringDecoder('utf8');
  // Inside the file, reading starts a byte early: the text up to the first newline is the end of a line begun
  // before the window (empty when the window starts on a line's first byte), and is skipped.
  const from = start > 0 ? start - 1 : 0;
  const buffer = Buffer.alloc(Math.min(CHUNK_BYTES, end - from));
  const cutter = new LineCutter(maxLineBytes, start > 0);
  for (let at = from; at < end; ) {
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, end - at), at);
    if (bytesRead === 0) break;
    at += bytesRead;
    yield cutter.push(decoder.write(buffer.subarray(0, bytesRead)));
  }
  // The window's last line is whole only where the file ends.
  if (end >= fileBytes) yield cutter.last(decoder.end());
}

/**
 * Keeps at most `max` items of a stream, evenly spaced, in bounded memory: every
 * stride-th is kept and the stride doubles whenever more than 2 * max positions
 * were sampled at it; the last item is always kept. Items come as thunks, made
 * only when sampled, so a long stream is parsed only where it is sampled: about
 * 2 * max per doubling, also when most lines are not items (a planted file of
 * 22 million "{}" lines was parsed line by line, a minute of a server's time).
 */
export class EvenThinner<T> {
  /** Kept items with their position in the stream. */
  private held: { at: number; item: T }[] = [];
  private stride = 1;
  private seen = 0;
  /** Thunks called: what reading the stream cost. */
  made = 0;
  private last: (() => T | null) | null = null;

  constructor(private readonly max: number) {}

  push(make: () => T | null): void {
    const at = this.seen++;
    this.last = make;
    if (at % this.stride !== 0) return;
    this.made++;
    const item = make();
    if (item !== null) this.held.push({ at, item });
    if (at / this.stride >= 2 * this.max) {
      this.stride *= 2;
      this.held = this.held.filter((h) => h.at % this.stride === 0);
    }
  }

  result(): T[] {
    const k = Math.ceil(this.held.length / this.max);
    const kept = k > 1 ? this.held.filter((_, i) => i % k === 0) : [...this.held];
    if (this.last && kept.at(-1)?.at !== this.seen - 1) {
      const item = this.last();
      if (item !== null) kept.push({ at: this.seen - 1, item });
    }
    return kept.map((h) => h.item);
  }
}
