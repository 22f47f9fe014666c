import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

import { ApiError } from '../../../api/errors';
import type { RecordSource } from './record-source';
import { checkAborted, fileSize } from './record-source';

/** Splits one CSV line, honouring double-quoted cells ("a,b" and "" escapes). */
export function splitCsvLine(line: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      cells.push(cell);
      cell = '';
    } else cell += c;
  }
  cells.push(cell);
  return cells.map((s) => s.trim());
}

async function* lines(path: string): AsyncGenerator<{ text: string; line: number }> {
  const rl = createInterface({ input: createReadStream(path, { highWaterMark: 1 << 20 }), crlfDelay: Infinity });
  let line = 0;
  for await (const text of rl) {
    line++;
    if (text.trim() !== '') yield { text, line };
  }
}

/**
 * CSV with a header row: every column but the label becomes a float32 value
 * of field `x`; the label column becomes `y`. A first pass counts the rows so
 * the cache layout is known before writing; the second parses and converts.
 */
export async function csvSource(path: string, label: string, labelDtype: 'int32' | 'float32'): Promise<RecordSource> {
  const sourceBytes = await fileSize(path);
  let header: string[] | null = null;
  let records = 0;
  for await (const { text } of lines(path)) {
    if (!header) header = splitCsvLine(text);
    else records++;
  }
  if (!header) throw new ApiError('E_DATA', `${path} is empty: a header row is needed`);
  const columns = header;
  const labelIndex = columns.indexOf(label);
  if (labelIndex < 0) throw new ApiError('E_BAD_INPUT', `label column '${label}' is not in ${path} (columns: ${columns.join(', ')})`);
  if (records === 0) throw new ApiError('E_DATA', `${path} has a header but no rows`);
  const featureIndex = columns.map((_, i) => i).filter((i) => i !== labelIndex);
  if (featureIndex.length === 0) throw new ApiError('E_DATA', `${path} has no feature columns besides '${label}'`);

  const parse = (cell: string, line: number, col: number): number => {
    const v = cell === '' ? NaN : Number(cell);
    if (!Number.isFinite(v)) {
      throw new ApiError('E_DATA', `${path} line ${line}, column '${columns[col]}' (${col + 1}): ${JSON.stringify(cell)} is not a number`);
    }
    return v;
  };

  return {
    kind: 'csv',
    description: path,
    records,
    fields: [
      { name: 'x', dtype: 'float32', shape: [featureIndex.length] },
      { name: 'y', dtype: labelDtype, shape: [] },
    ],
    files: [path],
    sourceBytes,
    options: { label, labelDtype },
    uncachedReason: `${path} is text: every record must be parsed, so it cannot be read in place`,
    rawLayout: () => null,
    async *chunks(maxRecords, signal) {
      let x = new Float32Array(maxRecords * featureIndex.length);
      let y = labelDtype === 'int32' ? new Int32Array(maxRecords) : new Float32Array(maxRecords);
      let n = 0;
      let first = true;
      for await (const { text, line } of lines(path)) {
        if (first) {
          first = false;
          continue;
        }
        const cells = splitCsvLine(text);
        if (cells.length !== columns.length) {
          throw new ApiError('E_DATA', `${path} line ${line} has ${cells.length} columns but the header has ${columns.length}`);
        }
        featureIndex.forEach((c, j) => (x[n * featureIndex.length + j] = parse(cells[c], line, c)));
        const v = parse(cells[labelIndex], line, labelIndex);
        if (labelDtype === 'int32' && !Number.isInteger(v)) {
          throw new ApiError('E_DATA', `${path} line ${line}, column '${label}': ${JSON.stringify(cells[labelIndex])} is not an integer class label`);
        }
        y[n++] = v;
        if (n === maxRecords) {
          checkAborted(signal);
          yield { count: n, fields: [new Uint8Array(x.buffer), new Uint8Array(y.buffer)] };
          x = new Float32Array(maxRecords * featureIndex.length);
          y = labelDtype === 'int32' ? new Int32Array(maxRecords) : new Float32Array(maxRecords);
          n = 0;
        }
      }
      if (n > 0) {
        yield {
          count: n,
          fields: [new Uint8Array(x.buffer, 0, n * featureIndex.length * 4), new Uint8Array(y.buffer, 0, n * 4)],
        };
      }
    },
  };
}
