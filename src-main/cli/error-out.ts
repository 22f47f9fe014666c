import { ApiError } from '../api/errors';
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
export function errorOut(err: unknown, options: { json: boolean; pointer?: string }): void {
  const code = err instanceof ApiError ? err.code : 'E_INTERNAL';
  const message = (err as NodeJS.ErrnoException | null)?.syscall === 'uv_cwd' ? CWD_GONE : err instanceof Error ? err.message : String(err);
  const words = err instanceof ApiError ? errorWords(code, message) : errorWords('', message);
  process.stderr.write(`trainbench: ${words.replace(/\n/g, '\n  ')}\n${options.pointer ?? ''}`);
  if (options.json) process.stdout.write(jsonText({ error: { code, message } }, 2) + '\n');
}
