import { INVISIBLE_BUT_NEWLINE, printable } from '../api/shell-word';

/**
 * A --json answer as its text. JSON.stringify escapes only C0 control characters: a run's title or kind read from a
 * planted run.json could still carry C1 controls (U+009B is CSI to many terminals), line and paragraph separators,
 * bidi overrides and characters drawn as nothing straight to the terminal. Every character printable() would escape
 * is written as \u escapes (a pair for one past U+FFFF; the newlines of the indentation stay): the same JSON to a parser, inert on a screen.
 */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(INVISIBLE_BUT_NEWLINE, (c) =>
    Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''),
  );
}

/**
 * A person-readable answer as written to the terminal: whatever a formatter put together from files and requests
 * (a wizard's reasons, a script's error, a saved state's findings), every character that could redraw or hide text
 * escaped, line breaks kept. Formatters escape the fields they know come from files; this holds for the ones they miss.
 */
export function textOut(text: string): string {
  return printable(text, { lines: true });
}
