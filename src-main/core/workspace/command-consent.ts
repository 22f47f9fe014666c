// A command named by a workspace file (a saved run's, a stopped optimisation's) runs only on the person's word,
// and only the command they read: `--yes` takes the fingerprint shown beside it, so a file changed between the
// reading and the running (the workspace is shared and copied between rigs) is refused, not run.
import { createHash } from 'node:crypto';

import { ApiError } from '../../api/errors';
import { shellLine, shellWord } from '../../api/shell-word';

export interface SavedCommand {
  command: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string>>;
}

/** Twelve hex digits of SHA-256 over the command, its folder and its environment: what --yes names. */
export function commandFingerprint(t: SavedCommand): string {
  const env = Object.entries(t.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(JSON.stringify([t.command, t.cwd, env])).digest('hex').slice(0, 12);
}

/** The command as a shell reads it back, with its folder and environment, control characters escaped. */
export function describeCommand(t: SavedCommand): string {
  const env = Object.entries(t.env).map(([k, v]) => `${k}=${shellWord(v)}`);
  return `${shellLine([...t.command])} (in ${shellWord(t.cwd)}${env.length ? `, with ${env.join(' ')}` : ''})`;
}

/**
 * Passes when `consent` is the fingerprint of the command the file names now; otherwise refuses, showing the
 * command and the fingerprint that runs it. `what` says where it comes from and what running it does.
 */
export function requireConsent(what: string, t: SavedCommand, consent: string | boolean | undefined): void {
  const fingerprint = commandFingerprint(t);
  if (consent === fingerprint) return;
  const given = typeof consent === 'string' ? `--yes ${shellWord(consent)} was given for another command; the file now names ` : '';
  throw new ApiError(
    'E_BAD_INPUT',
    `${what}: ${given}${describeCommand(t)}; it comes from the run's file, so pass --yes ${fingerprint} to run exactly this`,
  );
}
