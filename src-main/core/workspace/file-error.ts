import type { ErrorCode } from '../../api/errors';
import { ApiError } from '../../api/errors';

/** What is wrong with a workspace file: callers tell a missing file (often normal) from the rest. */
export type FileProblem = 'missing' | 'link' | 'not-a-file' | 'not-a-folder' | 'too-large' | 'outside' | 'unreadable' | 'unwritable' | 'not-json';

export class WorkspaceFileError extends ApiError {
  constructor(
    readonly problem: FileProblem,
    readonly file: string,
    message: string,
    code: ErrorCode = problem === 'missing' ? 'E_BAD_INPUT' : 'E_DATA',
  ) {
    super(code, message);
  }
}

export const isMissing = (err: unknown): boolean => err instanceof WorkspaceFileError && err.problem === 'missing';

/** Why the file system refused a write, in words: the disk, not the data, is what a person has to see to. */
export const WRITE_FAILURES: Record<string, string> = {
  ENOSPC: 'no space left on the disk',
  EDQUOT: 'the disk quota is used up',
  EFBIG: 'the file is larger than the file system allows',
  EIO: 'the disk reported an input/output error',
  EPERM: 'the file system refused the change (a file made immutable, or held by another program)',
  EACCES: 'permission denied',
  EROFS: 'the file system is read-only',
};

/** Why a path names nothing a system call can reach, in words (ENOENT aside: each caller says "missing" its own way). */
export const PATH_FAILURES: Record<string, string> = {
  ENOTDIR: 'a part of its path is a file, not a folder',
  ENAMETOOLONG: 'its name is longer than the file system allows',
  ELOOP: 'its path goes through links that loop',
  EACCES: 'permission denied',
};

/** A refusal's reason in words when its code has one, else null. */
export function failureReason(code: string | undefined): string | null {
  if (!code) return null;
  return Object.hasOwn(PATH_FAILURES, code) ? PATH_FAILURES[code] : Object.hasOwn(WRITE_FAILURES, code) ? WRITE_FAILURES[code] : null;
}
