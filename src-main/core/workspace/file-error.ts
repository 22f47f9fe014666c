import type { ErrorCode } from '../../api/errors';
import { ApiError } from '../../api/errors';
import { failureReason } from '../../api/fs-failures';

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

/** An open refused for any other reason, in words where the code has them; an unknown code is kept to be looked up. */
export function cannotOpen(code: string | undefined, shown: string): WorkspaceFileError {
  return new WorkspaceFileError('unreadable', shown, `${shown} cannot be opened: ${failureReason(code) ?? `the system refused it (${code ?? 'no code'})`}`);
}
