/** The byte layout of cache shards (docs/cache-format.md): a 64-byte header, then one 64-aligned block per field. */
export const SHARD_MAGIC = Buffer.from('TBSHARD\0', 'latin1');
export const SHARD_HEADER_BYTES = 64;
export const CACHE_FORMAT_VERSION_WRITTEN = 1;

export const align64 = (n: number) => Math.ceil(n / 64) * 64;

export function recordsPerShard(shardBytes: number, recordBytes: number[]): number {
  const usable = shardBytes - 64 * (recordBytes.length + 1);
  return Math.max(1, Math.floor(usable / recordBytes.reduce((a, b) => a + b, 0)));
}

export interface ShardPlan {
  index: number;
  file: string;
  firstRecord: number;
  records: number;
  fieldOffsets: number[];
  bytes: number;
}

export function planShards(records: number, perShard: number, recordBytes: number[]): ShardPlan[] {
  const shards: ShardPlan[] = [];
  for (let index = 0, first = 0; first < records; index++, first += perShard) {
    const n = Math.min(perShard, records - first);
    const fieldOffsets: number[] = [];
    let end = SHARD_HEADER_BYTES;
    for (const rb of recordBytes) {
      const start = align64(end);
      fieldOffsets.push(start);
      end = start + n * rb;
    }
    shards.push({ index, file: `shard-${String(index).padStart(5, '0')}.bin`, firstRecord: first, records: n, fieldOffsets, bytes: align64(end) });
  }
  return shards;
}

export function shardHeader(index: number, records: number, fields: number): Buffer {
  const h = Buffer.alloc(SHARD_HEADER_BYTES);
  SHARD_MAGIC.copy(h, 0);
  h.writeUInt32LE(CACHE_FORMAT_VERSION_WRITTEN, 8);
  h.writeUInt32LE(index, 12);
  h.writeBigUInt64LE(BigInt(records), 16);
  h.writeUInt32LE(fields, 24);
  return h;
}
