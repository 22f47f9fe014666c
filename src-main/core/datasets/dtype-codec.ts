import type { CacheDType } from '../../api/datasets';
import { DTYPE_BYTES } from '../../api/datasets';
import { floatToHalf, halfToFloat } from './float16';

/** Values of little-endian bytes as numbers (int64 beyond 2^53 loses precision, as in JS). */
export function decode(bytes: Uint8Array, dtype: CacheDType): ArrayLike<number> {
  const width = DTYPE_BYTES[dtype];
  // Typed arrays need aligned offsets; chunks sliced from stream buffers may not be.
  const aligned = bytes.byteOffset % width === 0 ? bytes : new Uint8Array(bytes);
  const { buffer, byteOffset, byteLength } = aligned;
  const n = byteLength / width;
  switch (dtype) {
    case 'bool':
    case 'uint8': return new Uint8Array(buffer, byteOffset, n);
    case 'int8': return new Int8Array(buffer, byteOffset, n);
    case 'int16': return new Int16Array(buffer, byteOffset, n);
    case 'uint16': return new Uint16Array(buffer, byteOffset, n);
    case 'int32': return new Int32Array(buffer, byteOffset, n);
    case 'uint32': return new Uint32Array(buffer, byteOffset, n);
    case 'float32': return new Float32Array(buffer, byteOffset, n);
    case 'float64': return new Float64Array(buffer, byteOffset, n);
    case 'int64': return Array.from(new BigInt64Array(buffer, byteOffset, n), Number);
    case 'uint64': return Array.from(new BigUint64Array(buffer, byteOffset, n), Number);
    case 'float16': return Array.from(new Uint16Array(buffer, byteOffset, n), halfToFloat);
  }
}

/** Encodes numbers as little-endian bytes of `dtype` (integers are rounded and clamped by the typed array). */
export function encode(values: ArrayLike<number>, dtype: CacheDType): Uint8Array {
  const n = values.length;
  const from = <T extends { buffer: ArrayBufferLike }>(a: T) => new Uint8Array(a.buffer);
  switch (dtype) {
    case 'bool': return Uint8Array.from(values, (v) => (v ? 1 : 0));
    case 'uint8': return Uint8Array.from(values, Math.round);
    case 'int8': return from(Int8Array.from(values, Math.round));
    case 'int16': return from(Int16Array.from(values, Math.round));
    case 'uint16': return from(Uint16Array.from(values, Math.round));
    case 'int32': return from(Int32Array.from(values, Math.round));
    case 'uint32': return from(Uint32Array.from(values, Math.round));
    case 'float32': return from(Float32Array.from(values));
    case 'float64': return from(Float64Array.from(values));
    case 'int64': return from(BigInt64Array.from(Array.from(values), (v) => BigInt(Math.round(v))));
    case 'uint64': return from(BigUint64Array.from(Array.from(values), (v) => BigInt(Math.round(v))));
    case 'float16': {
      const out = new Uint16Array(n);
      for (let i = 0; i < n; i++) out[i] = floatToHalf(values[i]);
      return from(out);
    }
  }
}

export function convert(bytes: Uint8Array, from: CacheDType, to: CacheDType): Uint8Array {
  return from === to ? bytes : encode(decode(bytes, from), to);
}

/** Running mean / standard deviation / min / max over all values of a field. */
export class StatsAccumulator {
  private n = 0;
  private sum = 0;
  private sq = 0;
  private min = Infinity;
  private max = -Infinity;

  add(values: ArrayLike<number>): void {
    let sum = 0;
    let sq = 0;
    let min = this.min;
    let max = this.max;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      sum += v;
      sq += v * v;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    this.n += values.length;
    this.sum += sum;
    this.sq += sq;
    this.min = min;
    this.max = max;
  }

  result(): { mean: number; std: number; min: number; max: number } | null {
    if (this.n === 0 || !Number.isFinite(this.sum) || !Number.isFinite(this.sq)) return null;
    const mean = this.sum / this.n;
    return { mean, std: Math.sqrt(Math.max(0, this.sq / this.n - mean * mean)), min: this.min, max: this.max };
  }
}
