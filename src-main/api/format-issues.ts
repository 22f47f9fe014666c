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
