import { ApiError } from '../../../api/errors';
import { sourceFileError } from './source-file';

/**
 * Exact reads from an async stream of buffers: `read(n)` returns n bytes or
 * throws E_DATA naming the file when the stream ends early.
 */
export class ByteStream {
  private readonly iterator: AsyncIterator<Buffer>;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private done = false;

  constructor(
    source: AsyncIterable<Buffer | string>,
    private readonly file: string,
    private readonly wrapError: (err: Error) => ApiError = (err) => sourceFileError(file, err),
  ) {
    this.iterator = (source as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  }

  /** Bytes consumed so far (for progress). */
  consumed = 0;

  async read(n: number, what: string): Promise<Buffer> {
    while (this.pendingBytes < n && !this.done) {
      let next: IteratorResult<Buffer>;
      try {
        next = await this.iterator.next();
      } catch (err) {
        throw err instanceof ApiError ? err : this.wrapError(err as Error);
      }
      if (next.done) {
        this.done = true;
        break;
      }
      this.pending.push(next.value);
      this.pendingBytes += next.value.length;
    }
    if (this.pendingBytes < n) {
      throw new ApiError('E_DATA', `${this.file} is truncated: it ends ${n - this.pendingBytes} bytes short of ${what}`);
    }
    const all = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.pending = rest.length ? [rest] : [];
    this.pendingBytes = rest.length;
    this.consumed += n;
    return out;
  }

  /** True when nothing is left (reads ahead one chunk if needed). */
  async atEnd(): Promise<boolean> {
    if (this.pendingBytes > 0) return false;
    if (this.done) return true;
    const next = await this.iterator.next().catch((err: Error) => {
      throw this.wrapError(err);
    });
    if (next.done) {
      this.done = true;
      return true;
    }
    this.pending.push(next.value);
    this.pendingBytes += next.value.length;
    return next.value.length === 0 ? this.atEnd() : false;
  }

  async close(): Promise<void> {
    await this.iterator.return?.();
  }
}
