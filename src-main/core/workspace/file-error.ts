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

export { failureReason, PATH_FAILURES, WRITE_FAILURES } from '../../api/fs-failures';
