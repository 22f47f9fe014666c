import type { ApiErrorPayload, ErrorCode } from '../api/errors';
import { ErrorCodeSchema } from '../api/errors';

/** Converts anything thrown in the host (addon errors carry `code` and `where`) to a contract error. */
export function toApiErrorPayload(err: unknown): ApiErrorPayload {
  const e = err as { code?: unknown; message?: unknown; where?: unknown };
  const parsed = ErrorCodeSchema.safeParse(e?.code);
  const code: ErrorCode = parsed.success ? parsed.data : 'E_INTERNAL';
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return typeof e?.where === 'string' ? { code, message, where: e.where } : { code, message };
}
