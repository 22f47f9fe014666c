import type { ApiError } from '../../src-main/api/errors';

/** Awaits a promise that must reject and returns its error (fails the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    return err as ApiError;
  }
  throw new Error('expected the promise to reject');
}
