import { readFileSync } from 'node:fs';

export interface SafetensorsTensor {
  dtype: string;
  shape: number[];
  data: Float32Array;
}

/**
 * An independent reader of the safetensors format (written from its spec, not
 * from our C++): u64 little-endian header length, JSON header, data offsets
 * relative to the end of the header.
 */
export function readSafetensors(file: string): { tensors: Map<string, SafetensorsTensor>; metadata: Record<string, string>; headerLength: number } {
  const bytes = readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, unknown>;
  const base = 8 + headerLength;
  const tensors = new Map<string, SafetensorsTensor>();
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = value as Record<string, string>;
      continue;
    }
    const t = value as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const [begin, end] = t.data_offsets;
    const slice = bytes.subarray(base + begin, base + end);
    const data = new Float32Array(slice.buffer.slice(slice.byteOffset, slice.byteOffset + slice.byteLength));
    tensors.set(name, { dtype: t.dtype, shape: t.shape, data });
  }
  return { tensors, metadata, headerLength };
}
