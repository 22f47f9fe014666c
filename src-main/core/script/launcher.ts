import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';

import { ApiError } from '../../api/errors';
import { PATH_FAILURES } from '../../api/fs-failures';
import type { ScriptTarget } from '../../api/script-target';
import { quotedText } from '../../api/shell-word';
import { packageRoot } from '../../engine/package-root';
import { workingDirectoryProblem } from '../workspace/workspace-files';

/** After SIGTERM, how long the process group gets before SIGKILL. */
const TERM_GRACE_MS = 3000;
/** How long to wait for the last processes of a killed group to disappear. */
const REAP_WAIT_MS = 5000;

export interface LaunchOptions {
  target: ScriptTarget;
  /** Variables the probe reads (TB_PROBE_*); PYTHONPATH gets the probe's folder in front. */
  probeEnv: Record<string, string>;
  probeDir: string;
  timeoutMs: number;
  onLine: (stream: 'stdout' | 'stderr', line: string) => void;
}

export interface LaunchOutcome {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
  /** Processes of the group still present after the kill (none is the only good answer). */
  leftover: boolean;
  /** Set when the command could not be started at all. */
  startError: string | null;
}

export interface Launch {
  pid: number | null;
  outcome: Promise<LaunchOutcome>;
  /** Ends the launch now: the whole process group is killed. */
  cancel(): void;
}

/** True while any process of the group exists (zombies not yet reaped included). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left to signal
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** SIGTERM to the group, SIGKILL after the grace, then waits for it to be empty; true if something is left. */
async function reapGroup(pgid: number, graceMs: number): Promise<boolean> {
  if (!groupAlive(pgid)) return false;
  signalGroup(pgid, 'SIGTERM');
  for (let waited = 0; waited < graceMs && groupAlive(pgid); waited += 50) await sleep(50);
  if (groupAlive(pgid)) signalGroup(pgid, 'SIGKILL');
  for (let waited = 0; waited < REAP_WAIT_MS && groupAlive(pgid); waited += 50) await sleep(50);
  return groupAlive(pgid);
}

/**
 * A script's working directory is absolute, whatever path the request came by (a form, the CLI, a saved run's file):
 * a relative one would run in whatever folder the process happens to be in.
 */
export function requireAbsoluteCwd(target: ScriptTarget): void {
  if (!path.isAbsolute(target.cwd)) throw new ApiError('E_BAD_INPUT', `the script's working directory must be an absolute path, got ${quotedText(target.cwd)}`);
}

const NOT_STARTED = { exitCode: null, signal: null, timedOut: false, cancelled: false, leftover: false } as const;

/** Why spawn failed, in words: the working directory's problem when it has one, else the command's. */
async function whyNotStarted(err: NodeJS.ErrnoException, target: ScriptTarget): Promise<string> {
  // spawn says ENOENT for a missing working directory as for a missing command.
  const folder = await workingDirectoryProblem(target.cwd);
  if (folder !== null) return folder;
  const command = JSON.stringify(target.command[0]);
  if (err.code === 'ENOENT') return `${command} was not found (PATH, or relative to ${target.cwd})`;
  if (err.code === 'EACCES') return `${command} cannot be run: permission denied (not executable?)`;
  if (err.code === 'ENAMETOOLONG') return `${command} or an argument is longer than the system allows`;
  if (err.code === 'E2BIG') return 'its arguments and environment together are longer than the system allows';
  if (err.code === 'ENOTDIR' || err.code === 'ELOOP') return `${command} cannot be reached: ${PATH_FAILURES[err.code]}`;
  return err.message;
}

/**
 * Starts the user's command in a process group of its own, with the probe on
 * PYTHONPATH. Whatever way it ends (its own exit, the probe's stop, the timeout,
 * a cancel), the group is killed afterwards, so torchrun's ranks and DataLoader
 * workers never outlive the launch.
 */
export function launchScript(options: LaunchOptions): Launch {
  const { target } = options;
  const env: NodeJS.ProcessEnv = { ...process.env, ...target.env };
  const inherited = env.PYTHONPATH;
  env.PYTHONPATH = inherited ? `${options.probeDir}${path.delimiter}${inherited}` : options.probeDir;
  // Live output: a Python writing to a pipe would otherwise hold its lines back until its buffer fills.
  env.PYTHONUNBUFFERED ??= '1';
  Object.assign(env, options.probeEnv);

  let timedOut = false;
  let cancelled = false;
  let child: ChildProcess;
  try {
    child = spawn(target.command[0], target.command.slice(1), {
      cwd: target.cwd,
      env,
      detached: process.platform !== 'win32',
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
  } catch (err) {
    // spawn throws, rather than emitting 'error', for a working directory that is a file or a name too long.
    const outcome = whyNotStarted(err as NodeJS.ErrnoException, target).then((why) => ({ ...NOT_STARTED, startError: `cannot start the command: ${why}` }));
    return { pid: null, outcome, cancel: () => {} };
  }
  const pid = child.pid ?? null;
  const stop = (why: 'timeout' | 'cancel') => {
    if (why === 'timeout') timedOut = true;
    else cancelled = true;
    if (pid === null) return;
    if (process.platform === 'win32') spawn('taskkill', ['/pid', String(pid), '/T', '/F'], { stdio: 'ignore' });
    else void reapGroup(pid, TERM_GRACE_MS);
  };
  const timer = setTimeout(() => stop('timeout'), options.timeoutMs);

  const streams = (['stdout', 'stderr'] as const).map((name) => {
    const split = lineSplitter((line) => options.onLine(name, line));
    const done = new Promise<void>((resolve) => {
      const s = child[name];
      if (!s) return resolve();
      s.on('data', (chunk: Buffer) => split.push(chunk));
      s.on('close', () => (split.end(), resolve()));
      s.on('error', () => resolve());
    });
    return done;
  });

  const outcome = new Promise<LaunchOutcome>((resolve) => {
    child.on('error', (err) => {
      clearTimeout(timer);
      void whyNotStarted(err as NodeJS.ErrnoException, target).then((why) => resolve({ ...NOT_STARTED, timedOut, cancelled, startError: `cannot start the command: ${why}` }));
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      void (async () => {
        // Children may hold the pipes open; the group is killed first, then the output is drained.
        const leftover = pid !== null && process.platform !== 'win32' ? await reapGroup(pid, TERM_GRACE_MS) : false;
        await Promise.race([Promise.all(streams), sleep(2000)]);
        resolve({ exitCode: code, signal, timedOut, cancelled, leftover, startError: null });
      })();
    });
  });
  return { pid, outcome, cancel: () => stop('cancel') };
}

/**
 * resources/python of this Trainbench: in a checkout, beside package.json; in
 * the packaged app, unpacked next to app.asar (Python cannot read inside it).
 */
export function probeDir(): string {
  const root = packageRoot();
  const base = path.basename(root) === 'app.asar' ? `${root}.unpacked` : root;
  return path.join(base, 'resources', 'python');
}

// The command's output, as lines.

/** A line longer than this is cut into pieces: a script that writes megabytes without a newline must not grow memory. */
export const MAX_OUTPUT_LINE = 8192;

/**
 * Splits a byte stream into lines: UTF-8 with replacement characters for bytes
 * that are not (a script may print anything), '\r' progress bars as lines,
 * over-long lines cut.
 */
export function lineSplitter(onLine: (line: string) => void): { push(chunk: Buffer): void; end(): void } {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  const drain = (text: string) => {
    pending += text;
    let at: number;
    while ((at = pending.search(/\r\n|\n|\r/)) >= 0) {
      const sep = pending.startsWith('\r\n', at) ? 2 : 1;
      emit(pending.slice(0, at));
      pending = pending.slice(at + sep);
    }
    while (pending.length > MAX_OUTPUT_LINE) {
      emit(pending.slice(0, MAX_OUTPUT_LINE));
      pending = pending.slice(MAX_OUTPUT_LINE);
    }
  };
  const emit = (line: string) => {
    if (line.length > 0) onLine(line);
  };
  return {
    push: (chunk) => drain(decoder.write(chunk)),
    end: () => {
      drain(decoder.end());
      emit(pending);
      pending = '';
    },
  };
}

/** The last `size` lines, for error messages. */
export class LineTail {
  private readonly lines: string[] = [];
  constructor(private readonly size: number) {}
  add(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.size) this.lines.shift();
  }
  text(): string {
    return this.lines.join('\n');
  }
}
