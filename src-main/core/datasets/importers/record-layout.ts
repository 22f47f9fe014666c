import type { RecordMember } from '../../../api/datasets';
import { CacheDTypeSchema, CacheFieldSchema } from '../../../api/datasets';
import { ApiError } from '../../../api/errors';
import { quoted } from './excerpt';
import { recordBytes } from './record-source';

/** A member of an interleaved record with its byte offset inside the record. */
export interface PlacedMember extends RecordMember {
  offset: number;
  bytes: number;
}

/** Members packed one after another (NumPy's default, align=False), and the record size. */
export function placeMembers(record: RecordMember[]): { members: PlacedMember[]; recordSize: number } {
  let offset = 0;
  const members = record.map((m) => {
    const placed = { ...m, offset, bytes: recordBytes(m) };
    offset += placed.bytes;
    return placed;
  });
  return { members, recordSize: offset };
}

/** The layout in the syntax `--record` takes: name:dtype:d1,d2,...,name:dtype: */
export const formatRecordLayout = (record: RecordMember[]): string => record.map((m) => `${m.name}:${m.dtype}:${m.shape.join(',')}`).join(',');

/**
 * Parses `features:uint8:104,9,9,policy:float16:1496,value:float16:`: members
 * `name:dtype:shape` separated by commas, where a shape's own commas continue
 * it and an empty shape is one value per record. Errors name the bad part.
 */
export function parseRecordLayout(text: string): RecordMember[] {
  const bad = (what: string) => new ApiError('E_BAD_INPUT', `record layout ${quoted(text, 120)}: ${what}; expected name:dtype:shape,... e.g. features:uint8:104,9,9,value:float16:`);
  if (text.trim() === '') throw bad('it is empty');
  const members: (RecordMember & { dims: string[] })[] = [];
  for (const token of text.split(',')) {
    const parts = token.split(':');
    if (parts.length === 1) {
      const last = members[members.length - 1];
      if (!last) throw bad(`${quoted(token)} comes before any name:dtype:shape member`);
      last.dims.push(token);
    } else if (parts.length === 3) {
      const [name, dtype, dim] = parts;
      if (!CacheFieldSchema.shape.name.safeParse(name).success) throw bad(`member name ${quoted(name)} must be letters, digits, _ . - (not starting with a digit)`);
      const parsed = CacheDTypeSchema.safeParse(dtype);
      if (!parsed.success) throw bad(`member '${name}' has dtype ${quoted(dtype)}, not one of ${CacheDTypeSchema.options.join(', ')}`);
      if (members.some((m) => m.name === name)) throw bad(`member '${name}' is given twice`);
      members.push({ name, dtype: parsed.data, shape: [], dims: dim === '' ? [] : [dim] });
    } else {
      throw bad(`${quoted(token)} is not name:dtype:shape`);
    }
  }
  return members.map(({ dims, ...m }) => {
    const shape = dims.map((d) => {
      const n = Number(d);
      if (d.trim() === '' || !Number.isInteger(n) || n < 1) throw bad(`member '${m.name}' has shape entry ${quoted(d)}, not a positive integer`);
      return n;
    });
    if (shape.length > 8) throw bad(`member '${m.name}' has ${shape.length} dimensions; at most 8`);
    return { ...m, shape };
  });
}
