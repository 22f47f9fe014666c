import type { CacheDType } from '../../../api/datasets';
import { ApiError } from '../../../api/errors';
import { excerpt, quoted } from './excerpt';

/** A value of the Python literal subset NumPy writes in .npy headers; an int past 2^53 stays exact as a bigint. */
type PyValue = string | number | bigint | boolean | null | PyValue[] | { [key: string]: PyValue };

/** NumPy headers nest 4 levels at most (dict, descr list, member tuple, sub-shape); the parser recurses once a level. */
export const MAX_NPY_HEADER_DEPTH = 32;

/** Parses the dict literal of a .npy header: strings, ints, True/False/None, tuples, lists, dicts. */
export function parsePyLiteral(text: string, file: string): PyValue {
  let i = 0;
  const fail = (what: string): never => {
    throw new ApiError('E_DATA', `${file}: bad .npy header at character ${i}: ${what}`);
  };
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const value = (depth: number): PyValue => {
    ws();
    const c = text[i];
    if ((c === '{' || c === '(' || c === '[') && depth >= MAX_NPY_HEADER_DEPTH) {
      fail(`brackets nested more than ${MAX_NPY_HEADER_DEPTH} deep (a NumPy header nests 4 at most): the file is damaged`);
    }
    if (c === '{') {
      i++;
      const obj: Record<string, PyValue> = {};
      for (;;) {
        ws();
        if (text[i] === '}') return i++, obj;
        const key = value(depth + 1);
        if (typeof key !== 'string') fail('dict keys must be strings');
        ws();
        if (text[i++] !== ':') fail("expected ':'");
        obj[key as string] = value(depth + 1);
        ws();
        if (text[i] === ',') i++;
      }
    }
    if (c === '(' || c === '[') {
      const close = c === '(' ? ')' : ']';
      i++;
      const items: PyValue[] = [];
      for (;;) {
        ws();
        if (text[i] === close) return i++, items;
        items.push(value(depth + 1));
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== close) fail(`expected ',' or '${close}'`);
      }
    }
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      if (end < 0) fail('unterminated string');
      const s = text.slice(i + 1, end);
      i = end + 1;
      return s;
    }
    const word = /^(True|False|None|-?\d+)/.exec(text.slice(i));
    if (!word) return fail(c === undefined ? 'unexpected end of header' : `unexpected ${quoted(c)}`);
    i += word[0].length;
    if (word[0] === 'True') return true;
    if (word[0] === 'False') return false;
    if (word[0] === 'None') return null;
    const n = Number(word[0]);
    return Number.isSafeInteger(n) ? n : BigInt(word[0]);
  };
  return value(0);
}

/** A header value as JSON text for messages; a bigint as its digits (JSON.stringify throws on one). */
function jsonText(v: PyValue | undefined): string {
  if (v === undefined) return 'missing';
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return `[${v.map(jsonText).join(',')}]`;
  if (v !== null && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${jsonText(x)}`).join(',')}}`;
  return JSON.stringify(v);
}

/** A shape as NumPy prints it: (3,) or (100, 0). */
const shapeText = (dims: (number | bigint)[]): string => excerpt(dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`, 80);

const KINDS: Record<string, CacheDType> = {
  b1: 'bool', i1: 'int8', u1: 'uint8', i2: 'int16', u2: 'uint16', i4: 'int32', u4: 'uint32', i8: 'int64', u8: 'uint64',
  f2: 'float16', f4: 'float32', f8: 'float64',
};

export interface NpyMember {
  name: string;
  dtype: CacheDType;
  shape: number[];
  /** Byte offset inside one array element (structured dtypes). */
  offset: number;
  bigEndian: boolean;
}

export interface NpyHeader {
  /** Elements along the first axis: the records. */
  records: number;
  /** Shape of one record of a plain array (the remaining axes). */
  recordShape: number[];
  /** One member for a plain array (named ''), several for a structured one. */
  members: NpyMember[];
  /** Bytes of one element of the dtype (a whole struct for structured arrays). */
  itemBytes: number;
  /** Bytes from the start of the .npy data to the first record. */
  dataOffset: number;
}

/** Parses a simple dtype string such as '<f4' or '|u1'. */
export function parseDescr(descr: string, file: string): { dtype: CacheDType | null; bytes: number; bigEndian: boolean } {
  const m = /^([<>|=])([a-zA-Z])(\d+)$/.exec(descr);
  if (!m) throw new ApiError('E_DATA', `${file}: dtype ${quoted(descr)} is not a numeric NumPy dtype`);
  const [, order, kind, size] = m;
  if (kind === 'V') return { dtype: null, bytes: Number(size), bigEndian: false };
  const dtype = KINDS[`${kind}${size}`];
  if (!dtype) {
    throw new ApiError('E_DATA', `${file}: dtype ${quoted(descr)} is not supported (numeric dtypes: bool, (u)int8..64, float16/32/64)`);
  }
  return { dtype, bytes: Number(size), bigEndian: order === '>' };
}

function members(descr: PyValue, file: string): { members: NpyMember[]; itemBytes: number } {
  if (typeof descr === 'string') {
    const d = parseDescr(descr, file);
    if (!d.dtype) throw new ApiError('E_DATA', `${file}: a void dtype is not a numeric array`);
    return { members: [{ name: '', dtype: d.dtype, shape: [], offset: 0, bigEndian: d.bigEndian }], itemBytes: d.bytes };
  }
  if (!Array.isArray(descr)) throw new ApiError('E_DATA', `${file}: unexpected descr ${excerpt(jsonText(descr), 80)}`);
  const out: NpyMember[] = [];
  let offset = 0;
  for (const entry of descr) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'string') {
      throw new ApiError('E_DATA', `${file}: nested structured dtypes are not supported (${excerpt(jsonText(entry), 80)})`);
    }
    const d = parseDescr(entry[1], file);
    const sub = Array.isArray(entry[2]) ? entry[2] : [];
    // A 0 would make a member of no values; the header's sizes are multiplied, so each must count exactly.
    if (!sub.every((n): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 1)) {
      throw new ApiError('E_DATA', `${file}: member ${quoted(entry[0])} has shape ${excerpt(jsonText(sub), 80)} in the .npy header; its dimensions must be whole numbers from 1`);
    }
    const count = sub.reduce((a, b) => a * b, 1);
    // Unnamed void members are padding (aligned structs).
    if (d.dtype && entry[0] !== '') out.push({ name: entry[0], dtype: d.dtype, shape: sub, offset, bigEndian: d.bigEndian });
    offset += d.bytes * count;
  }
  if (out.length === 0) throw new ApiError('E_DATA', `${file}: the structured dtype has no numeric members`);
  return { members: out, itemBytes: offset };
}

/** NumPy refuses headers over 10 000 bytes by default; allow far more, but not gigabytes from a corrupt length. */
export const MAX_NPY_HEADER_BYTES = 1 << 20;

/** Checks the magic and version in the first 8 bytes; returns how many bytes the header length takes (2 in v1, 4 in v2/v3). */
export function npyLengthBytes(head: Uint8Array, file: string): 2 | 4 {
  const magic = Buffer.from(head.subarray(0, 6)).toString('latin1');
  if (magic !== '\x93NUMPY') {
    throw new ApiError(
      'E_DATA',
      `${file} is not a .npy file (no \\x93NUMPY magic); for a headerless ndarray.tofile() dump, import it as raw data with its dtype and shape`,
    );
  }
  const major = head[6];
  if (major < 1 || major > 3) throw new ApiError('E_DATA', `${file}: .npy format version ${major} is not supported`);
  return major === 1 ? 2 : 4;
}

/**
 * Total header bytes (preamble, length and dict) from the little-endian length
 * field; `fileBytes` (null inside a compressed archive) bounds it.
 */
export function npyHeaderBytes(lengthField: Uint8Array, file: string, fileBytes: number | null): number {
  const view = new DataView(lengthField.buffer, lengthField.byteOffset, lengthField.byteLength);
  const dictBytes = lengthField.byteLength === 2 ? view.getUint16(0, true) : view.getUint32(0, true);
  const headerBytes = 8 + lengthField.byteLength + dictBytes;
  if (fileBytes !== null && headerBytes > fileBytes) {
    throw new ApiError('E_DATA', `${file}: the .npy header says it is ${dictBytes} bytes long, but the file is only ${fileBytes} bytes: the file is truncated or not a .npy file`);
  }
  if (dictBytes > MAX_NPY_HEADER_BYTES) {
    throw new ApiError('E_DATA', `${file}: the .npy header says it is ${dictBytes} bytes long, more than the ${MAX_NPY_HEADER_BYTES} bytes a real header needs: the file is damaged`);
  }
  return headerBytes;
}

export function parseNpyHeader(dictText: string, headerBytes: number, file: string): NpyHeader {
  const dict = parsePyLiteral(dictText, file);
  if (!dict || typeof dict !== 'object' || Array.isArray(dict)) throw new ApiError('E_DATA', `${file}: the .npy header is not a dict`);
  const { descr, fortran_order: fortran, shape } = dict as Record<string, PyValue>;
  if (!Array.isArray(shape) || shape.some((d) => (typeof d !== 'number' && typeof d !== 'bigint') || d < 0)) {
    throw new ApiError('E_DATA', `${file}: bad shape ${excerpt(jsonText(shape), 80)} in the .npy header`);
  }
  const dims = shape as (number | bigint)[];
  if (dims.length === 0) throw new ApiError('E_DATA', `${file} holds a single value (0-d array), not records`);
  if (fortran === true && dims.length > 1) {
    throw new ApiError(
      'E_DATA',
      `${file} is stored in Fortran (column-major) order, so its records are not contiguous; save it with np.save(path, np.ascontiguousarray(a)) and import again`,
    );
  }
  const { members: ms, itemBytes } = members(descr ?? null, file);
  const [records, ...recordShape] = dims;
  if (records === 0) throw new ApiError('E_DATA', `${file} has no records (shape ${jsonText(dims)})`);
  // Counts past 2^53 lose their last digits as numbers (and 0 x 10^23 bytes passes any size check): refused, named as the header has them.
  if (typeof records === 'bigint') {
    throw new ApiError('E_DATA', `${file}: the .npy header's shape ${shapeText(dims)} claims ${records} records, more than the ${Number.MAX_SAFE_INTEGER} that can be counted exactly: the header is damaged`);
  }
  const big = recordShape.find((d) => typeof d === 'bigint');
  if (big !== undefined) {
    throw new ApiError('E_DATA', `${file}: the .npy header's shape ${shapeText(dims)} has a dimension of ${big}, more than the ${Number.MAX_SAFE_INTEGER} that can be counted exactly: the header is damaged`);
  }
  if (recordShape.includes(0)) {
    throw new ApiError('E_DATA', `${file}: the .npy header's shape ${shapeText(dims)} has a 0 after the record count, so its records hold no values; a dataset needs at least one value per record`);
  }
  const bytes = [records, ...(recordShape as number[])].reduce((a, b) => a * b, itemBytes);
  if (!Number.isSafeInteger(bytes)) {
    throw new ApiError('E_DATA', `${file}: the .npy header's shape ${shapeText(dims)} of ${itemBytes}-byte elements makes more bytes than any file holds (over 2^53): the header is damaged`);
  }
  return { records, recordShape: recordShape as number[], members: ms, itemBytes, dataOffset: headerBytes };
}
