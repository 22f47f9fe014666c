import type { Workspace } from './workspace';
import { isMissing, MiB, streamFile } from './workspace-files';

/**
 * The lines of a JSONL file of the workspace, streamed, never held whole. A line
 * longer than maxLineBytes is dropped as it streams (not buffered), as is the
 * cut-off last line a killed writer leaves; a missing file yields nothing, and a
 * link, FIFO or other non-file is an error naming it (workspace-files.ts).
 */
export async function* jsonlLines(workspace: Workspace, file: string, maxLineBytes: number): AsyncGenerator<string> {
  let rest = '';
  let skipping = false;
  let stream;
  try {
    stream = await streamFile(workspace, file, { encoding: 'utf8', highWaterMark: MiB });
  } catch (err) {
    if (isMissing(err)) return;
    throw err;
  }
  for await (const chunk of stream) {
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
  if (!skipping && rest.trim()) yield rest;
}

/**
 * Keeps at most `max` items of a stream, evenly spaced, in bounded memory: every
 * stride-th is kept and the stride doubles whenever more than 2 * max are held;
 * the last item is always kept. Items come as thunks, made only when kept, so a
 * long stream is parsed only where it is sampled.
 */
export class EvenThinner<T> {
  /** Kept items with their position in the stream. */
  private held: { at: number; item: T }[] = [];
  private stride = 1;
  private seen = 0;
  private last: (() => T | null) | null = null;

  constructor(private readonly max: number) {}

  push(make: () => T | null): void {
    const at = this.seen++;
    this.last = make;
    if (at % this.stride !== 0) return;
    const item = make();
    if (item === null) return;
    this.held.push({ at, item });
    if (this.held.length > 2 * this.max) {
      this.held = this.held.filter((_, i) => i % 2 === 0);
      this.stride *= 2;
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
