import { z } from 'zod';

/**
 * Stable error codes that cross the contract. The first six come from the
 * native engine; the rest are raised by the TypeScript layers.
 */
export const ErrorCodeSchema = z.enum([
  'E_OOM',
  'E_BAD_INPUT',
  'E_DATA',
  'E_CUDA',
  'E_CANCELLED',
  'E_INTERNAL',
  /** The engine host process died while serving the request. */
  'E_ENGINE_CRASHED',
  /** The engine host did not answer in time. */
  'E_TIMEOUT',
  /** The request did not match its schema. */
  'E_BAD_REQUEST',
  /** No such method in the contract. */
  'E_UNKNOWN_METHOD',
  /** The transport is not connected. */
  'E_DISCONNECTED',
  /** A user's own training command (a script target) failed: it exited non-zero, was killed, or trained nothing. */
  'E_SCRIPT',
  /** The shell does not allow this request (serve mode starts the user's commands only with --allow-scripts). */
  'E_FORBIDDEN',
]);
export type ErrorCode = z.infer<typeof ErrorCodeSchema>;

export const ApiErrorSchema = z.object({
  code: ErrorCodeSchema,
  message: z.string(),
  /** Source location in the engine ("file.cpp:123") when the error came from native code. */
  where: z.string().optional(),
});
export type ApiErrorPayload = z.infer<typeof ApiErrorSchema>;

/** An error with a contract code, thrown on both sides of a transport. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly where?: string;

  constructor(code: ErrorCode, message: string, where?: string) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.where = where;
  }

  toPayload(): ApiErrorPayload {
    return this.where === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, where: this.where };
  }

  static fromPayload(payload: ApiErrorPayload): ApiError {
    return new ApiError(payload.code, payload.message, payload.where);
  }
}

/** Any thrown value as an ApiError: an unexpected one is E_INTERNAL with its message. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ApiError('E_INTERNAL', message);
}
