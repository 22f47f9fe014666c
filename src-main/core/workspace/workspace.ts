import { lstatSync, promises as fs, readlinkSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ApiError } from '../../api/errors';
import { failureReason } from '../../api/fs-failures';
import { isMissing, makeChosenFolder, readTextCapped, writeJsonConfined } from './workspace-files';

export const WORKSPACE_SCHEMA_VERSION = 1;
const WORKSPACE_FILE = 'workspace.json';
const SUBFOLDERS = ['datasets', 'runs', 'reports', 'sources'] as const;

/**
 * `<user-data>/workspace`, where user-data is the folder Electron gives an app
 * named Trainbench, so the CLI, serve mode and the desktop app share one workspace.
 */
export function defaultWorkspaceDir(
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env,
  home: string = os.homedir(),
): string {
  if (env.TRAINBENCH_WORKSPACE) return path.resolve(env.TRAINBENCH_WORKSPACE);
  const p = platform === 'win32' ? path.win32 : path.posix;
  let userData: string;
  if (platform === 'win32') userData = p.join(env.APPDATA ?? p.join(home, 'AppData', 'Roaming'), 'Trainbench');
  else if (platform === 'darwin') userData = p.join(home, 'Library', 'Application Support', 'Trainbench');
  else userData = p.join(env.XDG_CONFIG_HOME ?? p.join(home, '.config'), 'Trainbench');
  return p.join(userData, 'workspace');
}

export interface Workspace {
  readonly root: string;
  /**
   * Resolves a path relative to the workspace; refuses anything that escapes it,
   * by name ('..', absolute paths) or through a symbolic link.
   */
  resolve(relative: string): string;
}

/** Links followed before giving up, as the OS does (ELOOP). */
const MAX_LINKS = 40;

function isWithin(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return !(rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel));
}

/**
 * Names looked at, links' parts included, before a path is refused: far more than any real path holds, few enough that
 * a planted chain of dangling links, each naming ~1,900 parts, costs little: following it part by part recursively
 * took a quarter second per run folder and, 8 links deep, overflowed the stack (eighth re-attack); 1,024 names under
 * a folder 1,015 deep still took 72 ms a path, each lstat walking the whole prefix again (ninth).
 */
const MAX_PARTS = 256;

/** A path confinement could not resolve, said without where it leads (an answer maps nothing outside the workspace). */
class UnresolvablePath extends ApiError {}

/**
 * The real path of `p` even when its tail does not exist yet: the real path of
 * the longest existing prefix plus the rest. A dangling link is followed to
 * where it points, since creating a file through it would create it there.
 * Walked as the kernel walks it, a name at a time, with its budget of links.
 */
function realPathOf(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    // missing, dangling or unreadable: walked below
  }
  const split = (text: string) => text.split(/[\\/]+/).filter(Boolean);
  let done = path.parse(p).root;
  const todo = split(p.slice(done.length));
  let links = 0;
  for (let parts = 0; todo.length; parts++) {
    if (parts >= MAX_PARTS) throw new UnresolvablePath('E_BAD_INPUT', `it names more than ${MAX_PARTS} folders once its links are followed`);
    const part = todo.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      done = path.dirname(done);
      continue;
    }
    const next = path.join(done, part);
    // Past the longest path the kernel takes, the walk would go on where the kernel stops (a too-long name taken as a
    // plain one, a link past it not followed, while entering the folder a step at a time follows it: ninth re-attack).
    if (Buffer.byteLength(next) >= MAX_PATH_CHARS) throw new UnresolvablePath('E_BAD_INPUT', `it is longer than ${MAX_PATH_CHARS} bytes once its links are followed`);
    let stat;
    try {
      stat = lstatSync(next, { throwIfNoEntry: false });
    } catch {
      // Under a file, one name too long, unreadable: the kernel cannot go past it either, and the caller's own access
      // says why.
      stat = undefined;
    }
    if (stat?.isSymbolicLink()) {
      if (++links > MAX_LINKS) throw new UnresolvablePath('E_BAD_INPUT', `it goes through more than ${MAX_LINKS} links (a loop?)`);
      let target: string | null;
      try {
        target = readlinkSync(next);
      } catch {
        target = null; // no longer a link (removed or replaced since the lstat): taken as the name it is now
      }
      if (target !== null) {
        if (path.isAbsolute(target)) done = path.parse(target).root;
        todo.unshift(...split(target.slice(path.isAbsolute(target) ? path.parse(target).root.length : 0)));
        continue;
      }
    }
    done = next;
  }
  return done;
}

/**
 * Confines by name and by real path, so a link such as sources/etc -> /etc
 * cannot make a folder outside the workspace listable or importable (serve mode
 * answers any page that holds the token). Returns the path as named, not the real one.
 */
/** Longer than any path a file system takes (Linux PATH_MAX is 4096): refused before it reaches one. */
const MAX_PATH_CHARS = 4096;

export function resolveInside(root: string, relative: string): string {
  return checkedInside(root, relative).resolved;
}

/**
 * The real path (no links in it) that confinement checked, for a file opened by it and then required to be that
 * file (importers' sources): another process may swap a component for a link after the check, and a name taken
 * again later would follow it.
 */
export function resolveRealInside(root: string, relative: string): string {
  return checkedInside(root, relative).real;
}

function checkedInside(root: string, relative: string): { resolved: string; real: string } {
  if (relative.includes('\0')) throw new ApiError('E_BAD_INPUT', `path ${JSON.stringify(relative)} contains a NUL byte`);
  if (relative.length > MAX_PATH_CHARS) {
    throw new ApiError('E_BAD_INPUT', `path ${JSON.stringify(relative.slice(0, 40))}… is ${relative.length} characters long; no file system takes more than ${MAX_PATH_CHARS}`);
  }
  const resolved = path.resolve(root, relative);
  if (!isWithin(root, resolved)) throw new ApiError('E_BAD_INPUT', `path ${JSON.stringify(relative)} is outside the workspace`);
  let realRoot: string;
  let real: string;
  try {
    realRoot = realPathOf(root);
    real = realPathOf(resolved);
  } catch (err) {
    throw err instanceof UnresolvablePath ? new ApiError('E_BAD_INPUT', `path ${JSON.stringify(relative)} cannot be followed: ${err.message}`) : err;
  }
  if (!isWithin(realRoot, real)) {
    throw new ApiError(
      'E_BAD_INPUT',
      // Where it leads is not said: an answer must not map what lies outside the workspace.
      `path ${JSON.stringify(relative)} leads outside the workspace through a link; copy the files into the workspace instead`,
    );
  }
  return { resolved, real };
}

/** Creates the workspace layout if needed and records its schema version. */
export async function openWorkspace(dir: string): Promise<Workspace> {
  const root = path.resolve(dir);
  // Made a folder at a time (makeChosenFolder): --workspace /proc/self/x span for ever in Node's recursive mkdir.
  await makeChosenFolder(root).catch((err: unknown) => {
    throw new ApiError('E_BAD_INPUT', `cannot use ${root} as a workspace: ${(err as Error).message}`);
  });
  for (const sub of SUBFOLDERS) {
    await fs.mkdir(path.join(root, sub)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw new ApiError('E_BAD_INPUT', `cannot use ${root} as a workspace: ${sub}/ cannot be made: ${failureReason(err.code) ?? err.message}`);
    });
  }
  const workspace: Workspace = { root, resolve: (relative) => resolveInside(root, relative) };
  // Read as itself and capped: a link, FIFO or huge file at workspace.json must not hang or end the start.
  let existing: string | null = null;
  try {
    existing = await readTextCapped(workspace, WORKSPACE_FILE, 64 * 1024);
  } catch (err) {
    if (!isMissing(err)) throw new ApiError('E_DATA', `cannot use ${root} as a workspace: ${(err as Error).message}`);
  }
  if (existing === null) {
    await writeJsonConfined(workspace, WORKSPACE_FILE, { schemaVersion: WORKSPACE_SCHEMA_VERSION, createdAt: new Date().toISOString() });
  } else {
    let version: unknown;
    try {
      version = (JSON.parse(existing) as { schemaVersion?: unknown }).schemaVersion;
    } catch {
      version = undefined;
    }
    if (typeof version === 'number' && version > WORKSPACE_SCHEMA_VERSION) {
      throw new ApiError(
        'E_DATA',
        `workspace ${root} has schema version ${version}, newer than this Trainbench understands (${WORKSPACE_SCHEMA_VERSION}); update Trainbench`,
      );
    }
  }
  return workspace;
}
