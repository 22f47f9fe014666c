import { ApiError } from '../../../api/errors';
import { headerColumns, splitCsvLine } from './csv-header';
import { csvLines } from './csv-lines';
import { excerpt, excerptList, quoted } from './excerpt';
import type { RecordSource } from './record-source';
import { checkAborted } from './record-source';
import { sourceFileSize } from './source-file';

/** Longest CSV cell (characters): numbers and class names are short; anything longer is not a table cell. */
export const MAX_CSV_CELL_CHARS = 64 << 10;
/** Most distinct text labels: more than any classification table has, few enough to hold in memory. */
export const MAX_CSV_CLASSES = 10_000;

const asNumber = (cell: string): number => (cell === '' ? NaN : Number(cell));

/** Code point order, as Python's sorted() and numpy.unique order strings, so indices match a user's own mapping. */
const codePointOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * CSV with a header row: every column but the label becomes a float32 value
 * of field `x`; the label column becomes `y`. Numeric labels are stored as
 * they are; text labels (iris' "setosa") become class indices into the
 * sorted list of distinct labels, kept as the field's `classes`. A first pass
 * checks the shape of every row, counts them and collects the labels, so the
 * cache layout is known before writing; the second parses and converts.
 */
export async function csvSource(path: string, label: string, labelDtype: 'int32' | 'float32'): Promise<RecordSource> {
  const sourceBytes = await sourceFileSize(path);
  let columns: string[] | null = null;
  let labelIndex = -1;
  let records = 0;
  const labels = new Set<string>();
  let firstText: { line: number; cell: string } | null = null;

  const rowCells = (text: string, line: number, header: string[]): string[] => {
    const cells = splitCsvLine(text);
    if (cells.length !== header.length) {
      throw new ApiError('E_DATA', `${path} line ${line} has ${cells.length} columns but the header has ${header.length}`);
    }
    const long = cells.findIndex((c) => c.length > MAX_CSV_CELL_CHARS);
    if (long >= 0) {
      throw new ApiError(
        'E_DATA',
        `${path} line ${line}, column '${excerpt(header[long])}' (${long + 1}): the cell is longer than ${MAX_CSV_CELL_CHARS >> 10} KiB, the most a CSV cell may hold`,
      );
    }
    return cells;
  };

  for await (const { text, line } of csvLines(path)) {
    if (!columns) {
      columns = headerColumns(text, path);
      labelIndex = columns.indexOf(label);
      if (labelIndex < 0) throw new ApiError('E_BAD_INPUT', `label column '${excerpt(label)}' is not in ${path} (columns: ${excerptList(columns)})`);
      continue;
    }
    const cell = rowCells(text, line, columns)[labelIndex];
    records++;
    if (cell === '') throw new ApiError('E_DATA', `${path} line ${line}, column '${excerpt(label)}': the label is empty`);
    if (!firstText && !Number.isFinite(asNumber(cell))) firstText = { line, cell };
    // Past the bound the column cannot be classes; keep counting rows, the check below reports it.
    if (labels.size <= MAX_CSV_CLASSES) labels.add(cell);
  }
  if (!columns) throw new ApiError('E_DATA', `${path} is empty: a header row is needed`);
  const header = columns;
  if (records === 0) throw new ApiError('E_DATA', `${path} has a header but no rows`);
  const featureIndex = header.map((_, i) => i).filter((i) => i !== labelIndex);
  if (featureIndex.length === 0) throw new ApiError('E_DATA', `${path} has no feature columns besides '${excerpt(label)}'`);

  let classes: string[] | undefined;
  if (firstText) {
    const where = `${path} line ${firstText.line}, column '${excerpt(label)}': ${quoted(firstText.cell)} is not a number`;
    if (labelDtype !== 'int32') throw new ApiError('E_DATA', `${where}; text labels are classes: use labelDtype int32 (--label-dtype int32)`);
    if (labels.size > MAX_CSV_CLASSES) {
      throw new ApiError('E_DATA', `${where}, and the column has more than ${MAX_CSV_CLASSES} distinct labels: is '${excerpt(label)}' really the class column?`);
    }
    classes = [...labels].sort(codePointOrder);
  }
  const classIndex = new Map(classes?.map((c, i) => [c, i]));

  const parse = (cell: string, line: number, col: number): number => {
    const v = asNumber(cell);
    if (!Number.isFinite(v)) {
      throw new ApiError('E_DATA', `${path} line ${line}, column '${excerpt(header[col])}' (${col + 1}): ${quoted(cell)} is not a number`);
    }
    return v;
  };
  const labelValue = (cell: string, line: number): number => {
    if (classes) {
      const i = classIndex.get(cell);
      if (i === undefined) throw new ApiError('E_DATA', `${path} changed while it was read: line ${line} has a label (${quoted(cell)}) the first pass did not see`);
      return i;
    }
    const v = parse(cell, line, labelIndex);
    if (labelDtype === 'int32' && !Number.isInteger(v)) {
      throw new ApiError('E_DATA', `${path} line ${line}, column '${excerpt(label)}': ${quoted(cell)} is not an integer class label`);
    }
    return v;
  };

  const width = featureIndex.length;
  const newLabels = (n: number) => (labelDtype === 'int32' ? new Int32Array(n) : new Float32Array(n));
  return {
    kind: 'csv',
    description: path,
    records,
    fields: [
      { name: 'x', dtype: 'float32', shape: [width] },
      { name: 'y', dtype: labelDtype, shape: [], ...(classes ? { classes } : {}) },
    ],
    files: [path],
    sourceBytes,
    options: { label, labelDtype },
    uncachedReason: `${path} is text: every record must be parsed, so it cannot be read in place`,
    rawLayout: () => null,
    async *chunks(maxRecords, signal) {
      let x = new Float32Array(maxRecords * width);
      let y = newLabels(maxRecords);
      let n = 0;
      let first = true;
      for await (const { text, line } of csvLines(path)) {
        if (first) {
          first = false;
          continue;
        }
        const cells = rowCells(text, line, header);
        featureIndex.forEach((c, j) => (x[n * width + j] = parse(cells[c], line, c)));
        y[n++] = labelValue(cells[labelIndex], line);
        if (n === maxRecords) {
          checkAborted(signal);
          yield { count: n, fields: [new Uint8Array(x.buffer), new Uint8Array(y.buffer)] };
          x = new Float32Array(maxRecords * width);
          y = newLabels(maxRecords);
          n = 0;
        }
      }
      if (n > 0) yield { count: n, fields: [new Uint8Array(x.buffer, 0, n * width * 4), new Uint8Array(y.buffer, 0, n * 4)] };
    },
  };
}
