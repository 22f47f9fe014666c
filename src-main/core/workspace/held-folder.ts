// A folder of the workspace held open for writing into (issue 41, F3). Another local process
// that can write the workspace may swap any subfolder for a link between a check of the name
// and a write by it; a write must then not land outside. Node has no openat/renameat, so:
// - where /proc/self/fd exists (Linux), every component from the root down is opened
//   O_DIRECTORY|O_NOFOLLOW through /proc/self/fd/<fd of the one above>/<name>, which the kernel
//   resolves from the folder held, never by walking the name again; entries are then created,
//   linked and renamed through that same prefix, so a name swapped later changes nothing;
// - elsewhere (macOS, Windows) a write can go only by name: every component is checked (lstat,
//   no link), and right before the rename or link that makes a file visible the chain is checked
//   again and must still be the folder held (dev/ino, and where a folder can be opened, the
//   open one). A swap in the moments between that check and the rename is not excluded there.
// Neither stops the held folder itself being moved out of the workspace (a rename by a process
// that can write both places); that is refused when seen, right before the rename.
import { type BigIntStats, closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

import { cannotOpen, failureReason, WorkspaceFileError } from './file-error';
import type { Workspace } from './workspace';

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const DIRECTORY = constants.O_DIRECTORY ?? 0;
const FOLDER_FLAGS = constants.O_RDONLY | DIRECTORY | NOFOLLOW;

/** Where something was made in a held folder: its name there and the identity its open handle had. */
export interface Made {
  name: string;
  dev: bigint;
  ino: bigint;
}

export interface HeldFolder {
  /** As named (absolute), for messages and what callers return. */
  readonly abs: string;
  /** As messages name it: relative to the workspace. */
  readonly shown: string;
  /** The path of an entry of this folder, to create, link or rename by (through the held folder on Linux). */
  entry(name: string): string;
  /** Right before a file is made visible: refuses (a WorkspaceFileError) when the folder is no longer the one held. */
  verify(made?: Made): void;
  close(): void;
}

/** Test hook: the fallback for systems without /proc/self/fd, so that it is tested on Linux too. */
export const heldFolderTesting = { withoutProcFd: false };

let procFd: boolean | null = null;
export function throughProcFd(): boolean {
  if (heldFolderTesting.withoutProcFd) return false;
  procFd ??= process.platform === 'linux' && existsSync('/proc/self/fd');
  return procFd;
}

function isWithin(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return !(rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel));
}

const same = (a: { dev: bigint; ino: bigint }, b: { dev: bigint; ino: bigint }) => a.dev === b.dev && a.ino === b.ino;

function lstatOrNull(p: string): BigIntStats | null {
  try {
    return lstatSync(p, { bigint: true });
  } catch {
    return null;
  }
}

const linkError = (shown: string) =>
  new WorkspaceFileError('link', shown, `${shown} is a link in the workspace: files are written only into its real folders, never through a link`);
const changedError = (shown: string) =>
  new WorkspaceFileError('link', shown, `${shown} changed while it was written into (swapped for a link in the workspace?): not written`);

/** Why a component could not be held; `at` is where it is looked at again to say so. */
function walkError(err: unknown, at: string, shown: string): WorkspaceFileError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new WorkspaceFileError('missing', shown, `${shown} does not exist`);
  // O_DIRECTORY|O_NOFOLLOW on a link gives ENOTDIR on Linux, ELOOP elsewhere: lstat says which it was.
  if (code === 'ENOTDIR' || code === 'ELOOP' || code === 'EMLINK') {
    const st = lstatOrNull(at);
    if (st?.isSymbolicLink()) return linkError(shown);
    // Gone, or a folder again, since the open: it was being swapped.
    return !st || st.isDirectory() ? changedError(shown) : new WorkspaceFileError('not-a-folder', shown, `${shown} is not a folder`);
  }
  return cannotOpen(code, shown);
}

function makeOne(at: string, shown: string): void {
  try {
    mkdirSync(at);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Taken (by a folder, or by a link or file that holding it then refuses).
    // ENOENT: the folder held above it was removed meanwhile (a swap race of the ninth re-attack showed the bare code).
    const why = code === 'ENOENT' ? 'the folder it goes in was removed meanwhile' : (failureReason(code) ?? code ?? 'error');
    if (code !== 'EEXIST') throw new WorkspaceFileError('not-a-folder', shown, `${shown} cannot be created: ${why}`);
  }
}

/**
 * Holds the folder `abs` (inside the workspace by name) open for writing into, each component
 * taken as itself, never through a link; with `create`, missing components are made on the way.
 */
export function holdFolder(workspace: Workspace, abs: string, options: { create?: boolean } = {}): HeldFolder {
  const rel = path.relative(workspace.root, abs);
  const shown = rel || '.';
  if (!isWithin(workspace.root, abs)) throw new WorkspaceFileError('outside', shown, `${shown} is not inside the workspace`);
  const parts = rel ? rel.split(path.sep) : [];
  const shownOf = (i: number) => parts.slice(0, i + 1).join(path.sep);
  return throughProcFd() ? holdByFd(workspace, abs, shown, parts, shownOf, options.create ?? false) : holdByName(workspace, abs, shown, parts, shownOf, options.create ?? false);
}

function holdByFd(workspace: Workspace, abs: string, shown: string, parts: string[], shownOf: (i: number) => string, create: boolean): HeldFolder {
  // The root is the person's own choice (it may be reached through a link of theirs): followed.
  let fd: number;
  try {
    fd = openSync(workspace.root, constants.O_RDONLY | DIRECTORY);
  } catch (err) {
    throw walkError(err, workspace.root, '.');
  }
  try {
    for (const [i, name] of parts.entries()) {
      const at = `/proc/self/fd/${fd}/${name}`;
      if (create) makeOne(at, shownOf(i));
      let next: number;
      try {
        next = openSync(at, FOLDER_FLAGS);
      } catch (err) {
        throw walkError(err, at, shownOf(i));
      }
      closeSync(fd);
      fd = next;
    }
    // The name must lead to the folder held now; after this, the name no longer matters.
    const named = parts.length ? lstatOrNull(abs) : statSync(abs, { bigint: true });
    if (!named || !same(named, fstatSync(fd, { bigint: true }))) throw changedError(shown);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  const held = fd;
  return {
    abs,
    shown,
    entry: (name) => `/proc/self/fd/${held}/${name}`,
    verify: () => {
      const real = readlinkSync(`/proc/self/fd/${held}`);
      let root = workspace.root;
      try {
        root = realpathSync.native(root);
      } catch {
        // the root as named
      }
      if (!isWithin(root, real)) throw new WorkspaceFileError('outside', shown, `${shown} was moved out of the workspace while it was written into: not written`);
    },
    close: () => closeSync(held),
  };
}

function holdByName(workspace: Workspace, abs: string, shown: string, parts: string[], shownOf: (i: number) => string, create: boolean): HeldFolder {
  const walk = (make: boolean): BigIntStats => {
    let st = statSync(workspace.root, { bigint: true }); // the person's own choice: followed
    let at = workspace.root;
    for (const [i, name] of parts.entries()) {
      at = path.join(at, name);
      if (make) makeOne(at, shownOf(i));
      try {
        st = lstatSync(at, { bigint: true });
      } catch (err) {
        throw walkError(err, at, shownOf(i));
      }
      if (st.isSymbolicLink()) throw linkError(shownOf(i));
      if (!st.isDirectory()) throw new WorkspaceFileError('not-a-folder', shownOf(i), `${shownOf(i)} is not a folder`);
    }
    return st;
  };
  const identity = walk(create);
  // Where a folder can be opened (not Windows), the one opened must be the one checked.
  let fd: number | null = null;
  if (DIRECTORY && process.platform !== 'win32') {
    try {
      fd = openSync(abs, parts.length ? FOLDER_FLAGS : constants.O_RDONLY | DIRECTORY);
    } catch (err) {
      throw walkError(err, abs, shown);
    }
    if (!same(fstatSync(fd, { bigint: true }), identity)) {
      closeSync(fd);
      throw changedError(shown);
    }
  }
  const held = fd;
  return {
    abs,
    shown,
    entry: (name) => path.join(abs, name),
    // No openat in Node: a write here goes by name, so the chain is checked again just before the
    // rename or link that makes a file visible, and what was made must be in the folder held.
    verify: (made) => {
      const now = walk(false);
      if (!same(now, identity) || (held !== null && !same(fstatSync(held, { bigint: true }), now))) throw changedError(shown);
      if (made) {
        const st = lstatOrNull(path.join(abs, made.name));
        if (!st || !same(st, made)) throw changedError(shown);
      }
    },
    close: () => {
      if (held !== null) closeSync(held);
    },
  };
}
