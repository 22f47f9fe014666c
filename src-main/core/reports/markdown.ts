// Small markdown writers the report sections share: numbers as the app shows them, tables, figures.
import { formatValue } from '../../api/charts/theme';
import { intervalLevel } from '../../api/order-interval';
import { printable } from '../../api/shell-word';
import MarkdownIt from 'markdown-it';

/** A number as the app shows it (three significant digits, thousands separated), with its unit. */
export const fmt = (value: number | null | undefined, unit = ''): string => formatValue(value, unit);

/** The change from one value to another: "+4.1%", "−12%", or "×36" once it is twice or more. */
export function changeText(from: number, to: number): string {
  if (from === 0) return 'n/a';
  const ratio = to / from;
  return ratio >= 2 ? `×${formatValue(ratio)}` : signedPercent(ratio - 1);
}

/** A signed percentage: "+4.1%", "-12%". */
export function signedPercent(fraction: number): string {
  const p = 100 * fraction;
  return `${p > 0 ? '+' : p < 0 ? '\u2212' : ''}${formatValue(Math.abs(p))}%`;
}

/** An interval as text: "1,234 to 1,456". */
export const ci = (i: { low: number; high: number }) => `${fmt(i.low)} to ${fmt(i.high)}`;

/** A speedup interval as a change: "+12% (95% CI +4.1% to +20%)", its level the true one over few repetitions ("90.0% CI"). */
export const speedupText = (s: { median: number; low: number; high: number; coverage?: number }) =>
  `${signedPercent(s.median - 1)} (${intervalLevel(s)} CI ${signedPercent(s.low - 1)} to ${signedPercent(s.high - 1)})`;

/**
 * Text from outside (a run file) made inert in markdown, in prose and in a table cell alike: printable (no
 * line of its own, nothing reordered); `<` as an entity (no raw HTML, no `<!--` hiding the rest of the
 * document, no autolink); the `(` of `](` as an entity (no inline link or image: `[x](url)`, `![b](url)`; a
 * reference link needs a definition at the start of a line, which a value cannot begin); a leading `>` as an
 * entity (no block quote where a section starts a line with it). `[` and `>` inside the text are kept: a command's
 * `--dims=[64,64]` or `2>&1` must read (and copy) as it is in the reproduce command, and the wizard's own words
 * hold "64 -> 128". Entities, not backslashes: a planted backslash would escape the escape. `&` is kept, so
 * applying it twice changes nothing. Inside code an entity shows as written: only a value with `<` or `](` (a
 * tampered one, in practice) shows `&lt;` or `]&#40;` there.
 */
export function markdownText(text: string): string {
  return printable(text).replace(/</g, '&lt;').replace(/\]\(/g, ']&#40;').replace(/^(\s*)>/, '$1&gt;').replace(ENTITY, shownEntity);
}

/** A character reference, named or numeric: a renderer turns `&#x202E;` or `&rlm;` (plain ASCII) into the mark itself. */
const ENTITY = /&(?:#[xX][0-9a-fA-F]{1,8}|#[0-9]{1,10}|[A-Za-z][A-Za-z0-9]{1,31});/g;
const unescapeAll = new MarkdownIt().utils.unescapeAll;

/**
 * A reference to a character printable() escapes, written as that escape (re-attack 11: a title of
 * `&#x202E;fdp.exe&#x202C;` rendered reversed); any other stays as written (`&amp;`, `&#40;`), so applying
 * markdownText twice still changes nothing.
 */
function shownEntity(entity: string): string {
  const decoded = unescapeAll(entity);
  return decoded !== entity && printable(decoded) !== decoded ? printable(decoded) : entity;
}

/**
 * Text safe inside a table cell: no pipes or line breaks. A pipe is escaped as `\|` (which tables honour inside
 * code spans too); a backslash right before it is written as its reference, since a planted `\|` would come out
 * as `\\|`, which renderers that count backslashes split as a cell (re-attack 13).
 */
export function cell(text: string): string {
  return text.replace(/\\(?=\|)/g, '&#92;').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

const NUMERIC = /^[-\u2212+×]?[\d,.]+( ?[%a-zA-Z/]+)?( \(.*\))?$|^[\d,.]+ to [\d,.]+$|^-$|^$/;

/** A GitHub-flavoured table; a column whose cells are all numbers is right-aligned. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const align = headers.map((_, i) => (i > 0 && rows.length > 0 && rows.every((r) => NUMERIC.test(r[i] ?? '')) ? '--:' : ':--'));
  const line = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(headers), `| ${align.join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** An image link to a figure beside the markdown (relative, so the folder renders on a code host). */
export function figureLink(alt: string, file: string): string {
  return `![${alt.replace(/[[\]]/g, '').replace(/\s+/g, ' ')}](${file})`;
}

export const code = (text: string): string => `\`${text.replace(/`/g, "'")}\``;

export const MB = 1e6;
export const MiB = 2 ** 20;
