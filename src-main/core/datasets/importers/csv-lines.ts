import { ApiError } from '../../../api/errors';
import { sourceFileError, openSourceStream } from './source-file';

/** Longest CSV line read (bytes, without the newline): far past any real table row, far below what hurts memory. */
export const MAX_CSV_LINE_BYTES = 1 << 20;

const NEWLINE = 0x0a;
const CR = 0x0d;
const BOM = '\ufeff';

/**
 * The non-blank lines of a text file with their 1-based numbers, read in 1 MiB
 * chunks. A line is held only up to MAX_CSV_LINE_BYTES: a longer one (a binary
 * file, a table without newlines) is refused as soon as it passes the bound.
 */
export async function* csvLines(path: string): AsyncGenerator<{ text: string; line: number }> {
  const stream = openSourceStream(path, { highWaterMark: 1 << 20 });
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let line = 0;
  const tooLong = () =>
    new ApiError(
      'E_DATA',
      `${path} line ${line + 1} is longer than ${MAX_CSV_LINE_BYTES >> 20} MiB, the most a CSV line may hold: is it a CSV file with one record per line?`,
    );
  const finish = (tail: Buffer): { text: string; line: number } | null => {
    const bytes = pending.length === 0 ? tail : Buffer.concat([...pending, tail]);
    pending = [];
    pendingBytes = 0;
    line++;
    const end = bytes.length > 0 && bytes[bytes.length - 1] === CR ? bytes.length - 1 : bytes.length;
    let text = bytes.toString('utf8', 0, end);
    if (line === 1 && text.startsWith(BOM)) text = text.slice(1);
    return text.trim() === '' ? null : { text, line };
  };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let start = 0;
      for (let nl = chunk.indexOf(NEWLINE, start); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
        if (pendingBytes + nl - start > MAX_CSV_LINE_BYTES) throw tooLong();
        const row = finish(chunk.subarray(start, nl));
        if (row) yield row;
        start = nl + 1;
      }
      if (start < chunk.length) {
        pendingBytes += chunk.length - start;
        if (pendingBytes > MAX_CSV_LINE_BYTES) throw tooLong();
        pending.push(chunk.subarray(start));
      }
    }
    if (pendingBytes > 0) {
      const row = finish(Buffer.alloc(0));
      if (row) yield row;
    }
  } catch (err) {
    throw sourceFileError(path, err);
  } finally {
    stream.destroy();
  }
}
