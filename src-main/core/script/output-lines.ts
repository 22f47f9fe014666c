import { StringDecoder } from 'node:string_decoder';

/** A line longer than this is cut into pieces: a script that writes megabytes without a newline must not grow memory. */
export const MAX_OUTPUT_LINE = 8192;

/**
 * Splits a byte stream into lines: UTF-8 with replacement characters for bytes
 * that are not (a script may print anything), '\r' progress bars as lines,
 * over-long lines cut.
 */
export function lineSplitter(onLine: (line: string) => void): { push(chunk: Buffer): void; end(): void } {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  const drain = (text: string) => {
    pending += text;
    let at: number;
    while ((at = pending.search(/\r\n|\n|\r/)) >= 0) {
      const sep = pending.startsWith('\r\n', at) ? 2 : 1;
      emit(pending.slice(0, at));
      pending = pending.slice(at + sep);
    }
    while (pending.length > MAX_OUTPUT_LINE) {
      emit(pending.slice(0, MAX_OUTPUT_LINE));
      pending = pending.slice(MAX_OUTPUT_LINE);
    }
  };
  const emit = (line: string) => {
    if (line.length > 0) onLine(line);
  };
  return {
    push: (chunk) => drain(decoder.write(chunk)),
    end: () => {
      drain(decoder.end());
      emit(pending);
      pending = '';
    },
  };
}

/** The last `size` lines, for error messages. */
export class LineTail {
  private readonly lines: string[] = [];
  constructor(private readonly size: number) {}
  add(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.size) this.lines.shift();
  }
  text(): string {
    return this.lines.join('\n');
  }
}
