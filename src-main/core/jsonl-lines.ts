import { createReadStream } from 'node:fs';

/**
 * The lines of a JSONL file, streamed, never held whole. A line longer than
 * maxLineBytes is dropped as it streams (not buffered), as is the cut-off
 * last line a killed writer leaves; a missing file yields nothing.
 */
export async function* jsonlLines(file: string, maxLineBytes: number): AsyncGenerator<string> {
  let rest = '';
  let skipping = false;
  try {
    for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
      const lines = (rest + (chunk as string)).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (!skipping && line.trim() && line.length <= maxLineBytes) yield line;
        skipping = false;
      }
      if (rest.length > maxLineBytes) {
        rest = '';
        skipping = true;
      }
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return;
  }
  if (!skipping && rest.trim()) yield rest;
}

/** Every line parsed as JSON; lines that are not JSON (cut off by a crash) are skipped. */
export async function* jsonlValues(file: string, maxLineBytes: number): AsyncGenerator<unknown> {
  for await (const line of jsonlLines(file, maxLineBytes)) {
    try {
      yield JSON.parse(line);
    } catch {
      // a line cut off by a crash: the rest still counts
    }
  }
}

/**
 * Keeps at most `max` items of a stream, evenly spaced, in bounded memory: every
 * stride-th is kept and the stride doubles whenever more than 2 * max are held;
 * the last item is always kept.
 */
export class EvenThinner<T> {
  private held: T[] = [];
  private stride = 1;
  private seen = 0;
  private last: T | undefined;

  constructor(private readonly max: number) {}

  push(item: T): void {
    this.last = item;
    if (this.seen++ % this.stride !== 0) return;
    this.held.push(item);
    if (this.held.length > 2 * this.max) {
      this.held = this.held.filter((_, i) => i % 2 === 0);
      this.stride *= 2;
    }
  }

  result(): T[] {
    const k = Math.ceil(this.held.length / this.max);
    const kept = k > 1 ? this.held.filter((_, i) => i % k === 0) : [...this.held];
    if (this.last !== undefined && kept.at(-1) !== this.last) kept.push(this.last);
    return kept;
  }
}
