import type { CsvHeader } from '../../../api/datasets';
import { ApiError } from '../../../api/errors';
import { csvLines } from './csv-lines';
import { excerpt, excerptList } from './excerpt';
import { sourceFileSize } from './source-file';

/** Column names a label column usually has, most likely first (matched without case). */
const LABEL_NAMES = ['label', 'target', 'y', 'class'];

/** Splits one CSV line, honouring double-quoted cells ("a,b" and "" escapes). */
export function splitCsvLine(line: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let inQuotes = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (inQuotes) {
      if (c === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') inQuotes = false;
      else cell += c;
    } else if (c === '"') inQuotes = true;
    else if (c === ',') {
      cells.push(cell);
      cell = '';
    } else cell += c;
  }
  cells.push(cell);
  return cells.map((s) => s.trim());
}

const isNumber = (cell: string): boolean => cell !== '' && Number.isFinite(Number(cell));

/**
 * The columns of a CSV's first line, refused when that line cannot be a header: binary bytes,
 * numbers only (a table without its header row; pandas' own 0..n-1 column names are a header),
 * or two columns of one name (the label would be ambiguous).
 */
export function headerColumns(text: string, path: string): string[] {
  // A zero byte or an undecodable byte (U+FFFD after UTF-8 decoding) means the file is not text.
  // eslint-disable-next-line no-control-regex
  const bad = /[\u0000\ufffd]/.exec(text);
  if (bad) {
    throw new ApiError(
      'E_DATA',
      `${path} is not a text CSV file: its first line holds ${bad[0] === '\u0000' ? 'a zero byte' : 'bytes that are not UTF-8 text'} at character ${bad.index + 1}`,
    );
  }
  const columns = splitCsvLine(text);
  const counting = (from: number) => columns.every((c, i) => c === String(i + from));
  if (columns.every(isNumber) && !counting(0) && !counting(1)) {
    throw new ApiError(
      'E_DATA',
      `${path} has no header row: its first line (${excerptList(columns, 4)}) is numbers; add a first line naming the columns, e.g. ${columns.length > 1 ? 'f1,f2,…,label' : 'label'}`,
    );
  }
  const seen = new Map<string, number>();
  columns.forEach((c, i) => {
    const first = seen.get(c);
    if (first !== undefined && c !== '') {
      throw new ApiError('E_DATA', `${path}: columns ${first + 1} and ${i + 1} are both named '${excerpt(c)}'; give each column its own name`);
    }
    seen.set(c, i);
  });
  return columns;
}

/** The likely label column: one named label/target/y/class, else the last named column. */
export function suggestLabel(columns: string[]): string {
  for (const name of LABEL_NAMES) {
    const hit = columns.find((c) => c.toLowerCase() === name);
    if (hit) return hit;
  }
  return [...columns].reverse().find((c) => c !== '') ?? '';
}

/**
 * A CSV's header row and its likely label column. Only the first non-blank line is read, and at most
 * 1 MiB of it (csvLines' bound), so a huge or binary file answers at once, never by reading it all.
 */
export async function readCsvHeader(path: string): Promise<CsvHeader> {
  await sourceFileSize(path); // a directory, device or pipe is refused before a read could wait on it
  const lines = csvLines(path);
  try {
    const first = await lines.next();
    if (first.done) throw new ApiError('E_DATA', `${path} is empty: a CSV needs a header row naming its columns`);
    const columns = headerColumns(first.value.text, path);
    if (columns.length < 2) {
      throw new ApiError('E_DATA', `${path} has one column (${excerptList(columns)}): a CSV to import needs feature columns and a label column, separated by commas`);
    }
    return { path, columns, suggestedLabel: suggestLabel(columns) };
  } finally {
    await lines.return(undefined);
  }
}
