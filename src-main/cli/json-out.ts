/**
 * A --json answer as its text. JSON.stringify escapes only C0 control characters: a run's title or kind read from a
 * planted run.json could still carry C1 controls (U+009B is CSI to many terminals), line and paragraph separators and
 * bidi overrides straight to the terminal. They are written as \u escapes: the same JSON to a parser, inert on a screen.
 */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
