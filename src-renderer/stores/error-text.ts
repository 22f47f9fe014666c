import { ApiError } from '@api/errors';
import { errorWords } from '@api/error-words';

/** An error as the UI shows it: the message a person can act on, in words (errorWords), not a contract code. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) return errorWords(err.code, err.message);
  return String(err);
}
