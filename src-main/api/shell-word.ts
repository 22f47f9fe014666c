/** Characters a POSIX shell reads back as they are, unquoted. */
const SAFE = /^[A-Za-z0-9_./:,=@%+-]+$/;

/**
 * Characters that must never reach a terminal or a page as themselves: C0 controls, DEL and C1 controls
 * (ESC, CR and CSI/OSC redraw a terminal: a planted command could show as a harmless one), the Unicode
 * line and paragraph separators, the bidirectional formatting marks (they reorder what a page shows), and the
 * invisible ones (soft hyphen, zero-width space and joiners, word joiner, byte-order mark: a word with one reads as another).
 */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;
/** The bidirectional formatting marks alone (in CONTROL too): names a person gives are refused with one. */
export const BIDI_MARK = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
const NAMED: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One control character as its escape: \t, \n, \r, \x1b (C0 and DEL), \u009b (C1 and above). */
function escaped(c: string): string {
  const code = c.charCodeAt(0);
  return NAMED[c] ?? (code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
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
 * One word as a POSIX shell reads it back: as it is when safe; with a control character, in ANSI-C
 * quotes ($'…', which bash, zsh and ksh read back byte for byte) with it escaped, so it is seen and
 * unambiguous; else in single quotes (a quote inside closed, escaped, reopened).
 */
export function shellWord(word: string): string {
  if (SAFE.test(word)) return word;
  if (word.search(CONTROL) >= 0) return `$'${word.replace(/[\\']/g, '\\$&').replace(CONTROL, escaped)}'`;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A command line (argv) as a person reads it and a shell reads it back: each word through shellWord. */
export function shellLine(argv: readonly string[]): string {
  return argv.map(shellWord).join(' ');
}
