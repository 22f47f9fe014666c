import type { z } from 'zod';

import { printable } from './shell-word';

/** Issues named at most: a tampered file with a million bad entries makes a line a person reads, not 100 MiB. */
const MAX_ISSUES = 20;

/** Turns zod issues into one line a person can act on: `params.port: expected number, got "abc"`. */
export function formatIssues(error: z.ZodError, root: string): string {
  const shown = error.issues.slice(0, MAX_ISSUES).map((issue) => {
    // A path's keys come from the file (a record's keys are anyone's): escaped, as the values a message quotes are.
    const path = [root, ...issue.path.slice(0, 32).map((p) => printable(String(p).slice(0, 200)))].join('.');
    return `${path}: ${printable(issue.message)}`;
  });
  const more = error.issues.length - shown.length;
  return shown.join('; ') + (more > 0 ? `; and ${more.toLocaleString('en-US')} more` : '');
}

/**
 * What a JSON.parse error says, without the text Node quotes from the input: a file's
 * contents never travel in an error (it may be anything a shared workspace was given).
 */
export function jsonProblem(err: unknown): string {
  const message = (err as Error).message;
  const at = /position (\d+)/.exec(message)?.[1];
  if (at) return `not valid JSON (at character ${at})`;
  return /end of (JSON )?input/i.test(message) ? 'not valid JSON (it ends early)' : 'not valid JSON';
}

/**
 * A form field's issue as a person reads it beside the value typed: "must be at least 2" for zod's "Too small:
 * expected number to be >=2"; a refinement's own message (already words) as it is, its first letter lowered.
 */
export function issueWords(issue: z.core.$ZodIssue): string {
  const n = (x: unknown) => (typeof x === 'bigint' || typeof x === 'number' ? x.toLocaleString('en-US') : String(x));
  const i = issue as { code: string; origin?: string; minimum?: unknown; maximum?: unknown; inclusive?: boolean; expected?: string };
  if (i.code === 'too_small' && i.origin === 'number') return i.inclusive ? `must be at least ${n(i.minimum)}` : `must be more than ${n(i.minimum)}`;
  if (i.code === 'too_big' && i.origin === 'number') return i.inclusive ? `must be at most ${n(i.maximum)}` : `must be less than ${n(i.maximum)}`;
  if (i.code === 'invalid_type' && i.expected === 'int') return 'must be a whole number';
  if (i.code === 'invalid_type' && i.expected === 'number') return 'must be a number';
  return issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
}
