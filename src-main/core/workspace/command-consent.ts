// A command named by a workspace file (a saved run's, a stopped optimisation's) runs only on the person's word,
// and only as they read it: `--yes` takes the fingerprint shown beside it, so a file changed between the
// reading and the running (the workspace is shared and copied between rigs) is refused, not run.
import { createHash } from 'node:crypto';
import path from 'node:path';

import { ApiError } from '../../api/errors';
import { sensitiveEnv } from '../../api/script-target';
import { maxColumns, printable, shellLine, shellWord, visibleBlanks } from '../../api/shell-word';
import { realFolderOf } from './workspace-files';

export interface SavedCommand {
  command: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string>>;
}

/** What runs: the command, and every setting of the request that decides how (overrides, a collector, steps...). */
export interface SavedRequest {
  target: SavedCommand;
  [setting: string]: unknown;
}

/** JSON with every object's keys sorted: one text for one request, however its file ordered it. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * 128 bits of SHA-256 over the whole request and the real path of its folder: a file's writer picks both the command
 * shown and the one swapped in, so it is a collision they would need (2^64 hashes at 128 bits; 48 bits fall to a
 * laptop in minutes). The real folder is in it because a link on the way can be swapped after the reading: the ninth
 * re-attack pointed one at the person's project for the reading and at a planted one for the --yes.
 */
export function commandFingerprint(request: SavedRequest): string {
  return createHash('sha256').update(canonical(request)).update('\0').update(realFolderOf(request.target.cwd) ?? '').digest('hex').slice(0, 32);
}

/**
 * Terminal columns of settings, environment, folder and command shown for consent: about 50 lines of 80, all of it
 * on a screen or two and in any scrollback. Counted as the most they can fill (maxColumns): a re-attack filled 16,384
 * characters with U+3000 (two columns each) to push the command's start 393 lines above the --yes line, and the next
 * drew 244 lines from a count of 4,096 that trusted a width table.
 */
export const MAX_SHOWN_COLUMNS = 4_096;

/**
 * Variables a request may set and still be offered to run: each is named on the line that says what runs, and a
 * line of hundreds would hide one among them. Commands people save set a handful.
 */
export const MAX_SHOWN_ENV = 24;

/**
 * Where a program named without a folder is also looked for in the run's folder, which the file's writer may fill:
 * through PATH's relative entries ('' and '.' among them: the child looks them up after entering the folder), and
 * on Windows always (the folder is searched before PATH). The person's own PATH counts unless the request sets one.
 */
function lookedUpInFolder(target: SavedCommand): string | null {
  const program = target.command[0];
  if (/[\\/]/.test(program)) return null;
  if (process.platform === 'win32') return `; Windows looks for ${shellWord(program)} in the folder it runs in first`;
  // Unset, a lookup takes the system's default folders; set but empty, the folder itself.
  const searched = Object.hasOwn(target.env, 'PATH') ? target.env.PATH : process.env.PATH;
  if (searched === undefined) return null;
  const relative = [...new Set(searched.split(path.delimiter).filter((entry) => !path.isAbsolute(entry)))];
  if (!relative.length) return null;
  return `; ${shellWord(program)} is looked for in the folder it runs in too, through PATH's relative ${relative.length === 1 ? 'entry' : 'entries'} ${relative.map((e) => shellWord(e)).join(' ')}`;
}

/**
 * The program and its first two arguments, each cut to 60 characters, how many words there are in all, every variable
 * the request sets (those known to change what runs first), and where the program is looked for: a fifth re-attack
 * ran its own ./python3 through PATH=. while this line said "python3 train.py", a sixth its own usercustomize through
 * HOME, and a relative entry in the person's own PATH found a python3 planted in the folder.
 */
function whatRuns(request: SavedRequest, folder: string): string {
  const { target } = request;
  const { command } = target;
  const head = command.slice(0, 3).map((w) => (w.length > 60 ? `${w.slice(0, 60)}…` : w));
  const rest = command.length > 3 ? ` … (${command.length.toLocaleString('en-US')} words in all)` : '';
  const sensitive = new Set(sensitiveEnv(target.env).map((v) => v.name));
  const names = Object.keys(target.env);
  const named = [...names.filter((n) => sensitive.has(n)), ...names.filter((n) => !sensitive.has(n))];
  const env = named.length ? `, with ${named.join(', ')} set in its environment` : '';
  // The folder as the system enters it, links followed: a seventh re-attack wrote it with ".." and spelt "the folder
  // /home/me/project" out of the command's words right above this line; an eighth put a link before the "..".
  return `It runs ${shellLine(head)}${rest} in ${shellWord(folder)}${env}${lookedUpInFolder(target) ?? ''}${listens(request)}`;
}

/** A job across machines opens a listener for the other nodes' ranks: where, when the file asks for one. */
function listens(request: SavedRequest): string {
  const collector = request.collector as { host?: unknown; port?: unknown } | undefined;
  if (typeof collector?.host !== 'string') return '';
  const port = typeof collector.port === 'number' && collector.port > 0 ? `:${collector.port}` : '';
  return `; it listens on ${shellWord(collector.host)}${port} for the ranks of other machines`;
}

/**
 * Passes when `consent` is the fingerprint of the request the file names now; otherwise refuses, showing the
 * command's settings, environment and folder, then the command itself right before the fingerprint that runs it
 * (a long environment cannot push the command out of a terminal's scrollback). `what` says where it comes from
 * and what running it does. A request too long to read is refused without a fingerprint.
 */
export function requireConsent(what: string, request: SavedRequest, consent: string | boolean | undefined): void {
  const { target, ...settings } = request;
  // A folder whose real path cannot be worked out (a link chain past the longest path, gone, relative) could be shown
  // only as written, which names what the reader expects, not where the system goes (ninth re-attack).
  const real = path.isAbsolute(target.cwd) ? realFolderOf(target.cwd) : null;
  const fingerprint = commandFingerprint(request);
  if (consent === fingerprint && real !== null) return;
  const env = Object.entries(target.env).map(([k, v]) => `${k}=${shellWord(v)}`);
  const shown = `the settings ${visibleBlanks(printable(canonical(settings)))}, ${env.length ? `the environment ${env.join(' ')}, ` : ''}the folder ${shellWord(target.cwd)} and the command ${shellLine([...target.command])}`;
  if (real === null) {
    throw new ApiError('E_BAD_INPUT', `${what}: the run's file names ${shown}.\nIts folder cannot be entered here (missing, relative, or reached through links past the longest path): it is not offered to run; read the run's file and start the command yourself`);
  }
  // The last line counts too: it names the real folder, which links can make long (ninth re-attack).
  const columns = maxColumns(shown) + maxColumns(whatRuns(request, real));
  if (env.length > MAX_SHOWN_ENV) {
    throw new ApiError(
      'E_BAD_INPUT',
      `${what}, but it sets ${env.length.toLocaleString('en-US')} variables in its environment, more than the ${MAX_SHOWN_ENV} anyone checks one by one before agreeing: it is not offered to run; read the run's file and start the command yourself`,
    );
  }
  if (columns > MAX_SHOWN_COLUMNS) {
    throw new ApiError(
      'E_BAD_INPUT',
      `${what}, but its command, folder, environment and settings can fill ${columns.toLocaleString('en-US')} columns of a terminal (${Math.ceil(columns / 80).toLocaleString('en-US')} lines of 80), more than the ${MAX_SHOWN_COLUMNS.toLocaleString('en-US')} anyone reads before agreeing: it is not offered to run; read the run's file and start the command yourself`,
    );
  }
  const given = typeof consent === 'string' ? `--yes ${shellWord(consent)} was given for another command; ` : '';
  // The fingerprint on a line of its own that starts with what runs: words spelling a consent message of their own,
  // wrapped to look like one, could otherwise end right before the real --yes (fourth re-attack of issue 41).
  throw new ApiError('E_BAD_INPUT', `${what}: ${given}the run's file names ${shown}.\n${whatRuns(request, real)}; pass --yes ${fingerprint} to run exactly this`);
}
