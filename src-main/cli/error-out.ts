import { ApiError, toApiError } from '../api/errors';
import { errorWords } from '../api/error-words';
import { jsonText } from './json-out';

/** process.cwd() failed: the folder the shell is in was removed, or its path is longer than the system reads back. */
const CWD_GONE = 'the folder this command was started in cannot be read (removed, or a path too long): cd to another folder and run it again';

/**
 * A failed command, told on stderr in words (issue 41: no contract codes in text for people; "out of memory: …",
 * the message alone for a refused input) and, under --json, also as `{"error": {code, message}}` on stdout, so a
 * script still reads the code. A message may quote a run's file or a typed value: errorWords escapes its control
 * characters, and later lines are indented so a planted line break cannot pass as a line of our own.
 */
export function errorOut(thrown: unknown, options: { json: boolean; pointer?: string }): void {
  const cwdGone = (thrown as NodeJS.ErrnoException | null)?.syscall === 'uv_cwd';
  // A file system's refusal nothing worded on its way (a full disk, an immutable folder) is worded as every answer is.
  const err = cwdGone ? new ApiError('E_BAD_INPUT', CWD_GONE) : toApiError(thrown);
  // An unexpected error's own message, without "unexpected error:" before it, unless it came as one already.
  const words = errorWords(err.code === 'E_INTERNAL' && !(thrown instanceof ApiError) ? '' : err.code, err.message);
  process.stderr.write(`trainbench: ${words.replace(/\n/g, '\n  ')}\n${options.pointer ?? ''}`);
  if (options.json) process.stdout.write(jsonText({ error: { code: err.code, message: err.message } }, 2) + '\n');
}
