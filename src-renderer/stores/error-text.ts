import { ApiError } from '@api/errors';

/** An error as the UI shows it: the contract code, then the message a person can act on. */
export function errorText(err: unknown): string {
  return err instanceof ApiError ? `${err.code}: ${err.message}` : String(err);
}
