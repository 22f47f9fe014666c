/** Characters a POSIX shell reads back as they are, unquoted. */
const SAFE = /^[A-Za-z0-9_./:,=@%+-]+$/;

/**
 * Characters that must never reach a terminal or a page as themselves, by Unicode category, so a character
 * a list would miss cannot pass (a re-attack found U+2064 and the tag characters past an older list):
 * controls (Cc: C0, DEL and C1; ESC, CR and CSI/OSC redraw a terminal, so a planted command could show as a
 * harmless one), format characters (Cf: the bidirectional marks reorder what a page shows; zero-width spaces
 * and joiners, invisible operators, soft hyphen, byte-order mark, tag characters), the line and paragraph
 * separators (Zl, Zp), lone surrogates (Cs), and the marks and fillers that draw nothing although they are
 * letters or marks by category: the combining grapheme joiner, the Hangul fillers and the variation selectors.
 * Then every default-ignorable code point (drawn as nothing: a third re-attack found U+17B4, the Mongolian
 * selectors and U+FFF0-FFF8 past the categories) and every unassigned one (Cn: a later Unicode may make it
 * one of these). A word with one of them reads as another. A fifth found more that draw as nothing or as a
 * font pleases: private-use characters (Co), the blank braille pattern U+2800 and the object replacement U+FFFC.
 */
const INVISIBLE = String.raw`\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Cn}\u034f\u115f\u1160\u3164\uffa0\u2800\ufffc\ufe00-\ufe0f\u{e0100}-\u{e01ef}`;
/**
 * A combining mark past the third in a row: real text stacks two or three (Vietnamese, Indic scripts), a
 * planted name sixty, drawn as a tower over the lines around it. The mark is matched first, so other
 * characters cost no look back.
 */
const STACKED = String.raw`\p{M}(?<=\p{M}{4})`;
// eslint-disable-next-line no-misleading-character-class -- each combining mark in the class is matched alone, as meant
const CONTROL = new RegExp(`[${INVISIBLE}]|${STACKED}`, 'gu');
// eslint-disable-next-line no-misleading-character-class -- as above
const CONTROL_BUT_NEWLINE = new RegExp(`(?!\n)(?:[${INVISIBLE}]|${STACKED})`, 'gu');
// eslint-disable-next-line no-misleading-character-class -- as above
const CONTROL_BUT_LAYOUT = new RegExp(`(?![\n\t])(?:[${INVISIBLE}]|${STACKED})`, 'gu');
// eslint-disable-next-line no-misleading-character-class -- as above
const NOT_SEEN = new RegExp(`[${INVISIBLE}\\s\\p{M}]`, 'gu');

/** Whether a person would see anything of `text`: a name of blanks, marks and invisible characters reads as none. */
export function hasVisible(text: string): boolean {
  return text.replace(NOT_SEEN, '') !== '';
}
/** One character that must not be shown as itself, the newline apart (global: for replace). */
export const INVISIBLE_BUT_NEWLINE = CONTROL_BUT_NEWLINE;
/** The bidirectional formatting marks alone (in CONTROL too): names a person gives are refused with one. */
export const BIDI_MARK = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
const NAMED: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One control character as its escape: \t, \n, \r, \x1b (C0 and DEL), \u009b (C1 to U+FFFF), \U000e0041 (beyond). */
function escaped(c: string): string {
  const code = c.codePointAt(0)!;
  if (NAMED[c]) return NAMED[c];
  if (code < 0x80) return `\\x${code.toString(16).padStart(2, '0')}`;
  return code <= 0xffff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\U${code.toString(16).padStart(8, '0')}`;
}

/**
 * Text from a file or a request as it may be shown (a command, env value, working directory, run title):
 * every control character escaped, so what a person reads is what is there. With `lines`, a newline
 * stays one (for messages of several lines; a line break redraws nothing).
 */
export function printable(text: string, options: { lines?: boolean } = {}): string {
  return text.replace(options.lines ? CONTROL_BUT_NEWLINE : CONTROL, escaped);
}

/**
 * Text a caller sent (a name, an id, a folder) as a message quotes it: in JSON's quotes, cut to `max` characters with
 * an ellipsis, and escaped past what JSON escapes (C1 controls, separators, bidi marks), as the message is shown too.
 */
export function quotedText(text: string, max = 200): string {
  return printable(JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text));
}

/**
 * Blanks inside a word that would hide what is in it: a space other than U+0020 (U+00A0 and U+3000 read as one,
 * and one argument as two), and a run of more than two spaces (a re-attack padded a command with 15,500 of them,
 * so the part that mattered sat hundreds of blank rows above the --yes that ran it). shellWord escapes each one.
 */
const BLANKS = /[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+| {3,}/gu;

/** `text` with its BLANKS escaped, each character of them, as shellWord shows them (for text that is not a word: JSON). */
export function visibleBlanks(text: string): string {
  return text.replace(BLANKS, (run) => run.replace(/./gu, escaped));
}

/**
 * One word as a POSIX shell reads it back: as it is when safe; with a control character or BLANKS, in ANSI-C
 * quotes ($'…', which bash, zsh and ksh read back byte for byte) with those escaped, so they are seen and
 * unambiguous; else in single quotes (a quote inside closed, escaped, reopened).
 */
export function shellWord(word: string): string {
  if (SAFE.test(word)) return word;
  if (word.search(CONTROL) >= 0 || word.search(BLANKS) >= 0) {
    return `$'${visibleBlanks(word.replace(/[\\']/g, '\\$&').replace(CONTROL, escaped))}'`;
  }
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A command line (argv) as a person reads it and a shell reads it back: each word through shellWord. */
export function shellLine(argv: readonly string[]): string {
  return argv.map(shellWord).join(' ');
}

/**
 * Every string in a value (an answer or an event from the main process) through printable, keys of records
 * included: what reaches a page from a workspace file is then shown, put in a title or an aria-label, or
 * pasted as code only escaped, wherever a component puts it. Strings without such characters are returned
 * as they are (the same objects where nothing changed, so large answers cost a walk, not a copy).
 */
export function printableDeep<T>(value: T): T {
  // Newlines and tabs stay (a script's output lines, a report, notes): they lay text out, they redraw nothing on a page.
  if (typeof value === 'string') return value.replace(CONTROL_BUT_LAYOUT, escaped) as T;
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const shown = printableDeep(value[i]);
      if (shown !== value[i]) (out ??= value.slice())[i] = shown;
    }
    return (out ?? value) as T;
  }
  if (typeof value === 'object' && value !== null) {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      const k = printable(key);
      const shown = printableDeep(v);
      if (k !== key || shown !== v) changed = true;
      out[k] = shown;
    }
    return (changed ? out : value) as T;
  }
  return value;
}

/**
 * The most terminal columns `text` can fill: an ASCII character one, any other code point two, a combining mark
 * included. No width table is trusted: a third re-attack found spacing marks a table called zero-width and wide
 * scripts (Tangut) it called narrow, and drew five columns for one counted; wcwidth gives no code point more than two.
 */
export function maxColumns(text: string): number {
  let columns = 0;
  for (const c of text) columns += c.codePointAt(0)! < 0x80 ? 1 : 2;
  return columns;
}
