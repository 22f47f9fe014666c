import { z } from 'zod';

import { fileSystemFailure } from './fs-failures';

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

  /**
   * The error as it crosses to a client (the one place it is serialised: the API's answers, the desktop
   * app's replies, a run's record). An E_INTERNAL message is an unexpected error's own words, often a
   * system call's with the absolute path it failed on: there a path inside `root` (the workspace) shows
   * relative to it and any other absolute path as its last part, so an answer never maps the machine. Our own
   * messages keep a path outside the workspace (the person gave it, and may need it) but name the workspace's files
   * relative to it, as every message means them.
   */
  toPayload(root?: string): ApiErrorPayload {
    const message = this.code === 'E_INTERNAL' || this instanceof SystemRefusal ? withoutAbsolutePaths(this.message, root) : withinWorkspaceRelative(this.message, root);
    return this.where === undefined ? { code: this.code, message } : { code: this.code, message, where: this.where };
  }

  static fromPayload(payload: ApiErrorPayload): ApiError {
    return new ApiError(payload.code, payload.message, payload.where);
  }
}

/** A file system's refusal worded by toApiError: a system call's path, so an answer maps no folder outside the workspace. */
class SystemRefusal extends ApiError {}

/**
 * Any thrown value as an ApiError: a file system's refusal that no write path worded (a full disk, a folder made
 * immutable) is E_DATA in words, naming the file; any other unexpected one is E_INTERNAL with its message.
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const refused = fileSystemFailure(err);
  if (refused !== null) return new SystemRefusal('E_DATA', refused);
  const message = err instanceof Error ? err.message : String(err);
  return new ApiError('E_INTERNAL', message);
}

/**
 * An absolute path: quoted (as system calls quote them: "open '/home/John Smith/x'"), everything up to the closing
 * quote, spaces too; else a POSIX path from its leading slash, or a Windows one from its drive, up to a space, quote
 * or bracket (not one inside a word: "and/or", "3/4").
 */
const ABSOLUTE_PATH = /(?<=')(?:\/|[A-Za-z]:[\\/])[^'\n]+(?=')|(?<=")(?:\/|[A-Za-z]:[\\/])[^"\n]+(?=")|(?<![\w.~\\/-])(?:\/|[A-Za-z]:[\\/])[^\s'"`<>()[\]{},;|]+/g;

/** `message` with each path inside `root` relative to it, the rest as it is. */
export function withinWorkspaceRelative(message: string, root?: string): string {
  const base = root?.replace(/[\\/]+$/, '');
  if (!base) return message;
  let text = message;
  for (const sep of ['/', '\\']) text = text.split(`${base}${sep}`).join('');
  // The root itself ("cannot read <root>: it is a directory") as the workspace's own name for it.
  return text.replace(new RegExp(`${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?=$|[\\s:;,'")\\]])`, 'g'), '.');
}

/** `message` with each absolute path inside `root` relative to it ("runs/x/run.json") and any other as "…/" and its last part. */
export function withoutAbsolutePaths(message: string, root?: string): string {
  const base = root?.replace(/[\\/]+$/, '');
  // The workspace's own paths first, by their literal prefix: a root may hold a space ("Application Support").
  return withinWorkspaceRelative(message, root).replace(ABSOLUTE_PATH, (p) => {
    const bare = p.replace(/[.:]+$/, ''); // a sentence's own full stop or colon after the path
    const after = p.slice(bare.length);
    if (base && (bare === base || bare.startsWith(`${base}/`) || bare.startsWith(`${base}\\`))) return (bare.slice(base.length + 1) || '.') + after;
    const last = bare.split(/[\\/]/).filter(Boolean).pop();
    return (last ? `…/${last}` : '…') + after;
  });
}
