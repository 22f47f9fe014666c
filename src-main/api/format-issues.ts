import type { z } from 'zod';

/** Turns zod issues into one line a person can act on: `params.port: expected number, got "abc"`. */
export function formatIssues(error: z.ZodError, root: string): string {
  return error.issues
    .map((issue) => {
      const path = [root, ...issue.path.map(String)].join('.');
      return `${path}: ${issue.message}`;
    })
    .join('; ');
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
