/** Longest piece of user data an importer error quotes. */
export const EXCERPT_CHARS = 40;

// C0 and C1 controls, DEL, line/paragraph separators and bidi overrides: anything that can move
// the cursor, clear a terminal, ring its bell or reorder what a person reads.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * A short, printable excerpt of text from a user's file, for error messages
 * that end up on terminals and in the UI: control characters become \xNN or
 * \uNNNN escapes and anything past `max` characters becomes "…".
 */
export function excerpt(text: string, max = EXCERPT_CHARS): string {
  const cut = text.length > max ? text.slice(0, max) : text;
  const safe = cut.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
  return text.length > max ? `${safe}…` : safe;
}

/** excerpt() in double quotes, for quoting a value inside a sentence. */
export const quoted = (text: string, max = EXCERPT_CHARS): string => `"${excerpt(text, max)}"`;

/** A list of user-data names (e.g. CSV columns): each excerpted, at most `max` shown. */
export function excerptList(items: string[], max = 10): string {
  const shown = items.slice(0, max).map((s) => excerpt(s));
  return items.length > max ? `${shown.join(', ')}, and ${items.length - max} more` : shown.join(', ');
}
