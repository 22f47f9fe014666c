// The one way the services touch a workspace file. A workspace is shared, copied
// between rigs and unpacked from other people's bundles, so what lies in it is
// data, never a way out: a file is read only as itself (never through a link at
// its last component, never a FIFO, socket, device or folder, and the opened
// file's real path is checked again), every read has a size cap or streams in
// bounded memory, and writes go to a fresh temp file renamed over the name (a
// link planted there is replaced, never written through), both made through
// the folder held open (held-folder.ts), so a folder swapped for a link
// meanwhile cannot take the write outside. Messages name the
// file and the problem, never its contents. The lint rule in eslint.config.mjs
// keeps node:fs out of the other services.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, createReadStream, createWriteStream, fstatSync, lstatSync, openSync, promises as fs, readlinkSync, realpathSync, type WriteStream } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';

import { ApiError } from '../../api/errors';
import { jsonProblem } from '../../api/format-issues';
import { renameReplacing, writeFileAtomicIn, writeTempIn } from './atomic-write';
import { cannotOpen, failureReason, isMissing, PATH_FAILURES, WRITE_FAILURES, WorkspaceFileError } from './file-error';
import { jsonShapeProblem } from './json-depth';
import { type HeldFolder, holdFolder, type Made, throughProcFd } from './held-folder';
import type { Workspace } from './workspace';

export { type FileProblem, isMissing, WorkspaceFileError } from './file-error';

export const MiB = 1024 * 1024;

// O_NOFOLLOW refuses a link at the last component; O_NONBLOCK makes opening a FIFO return at once
// (then fstat refuses it) instead of blocking a thread-pool thread until a writer appears. Windows has
// neither: there the last component is lstat-ed first and the opened file compared with it.
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;

function isWithin(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return !(rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel));
}

/** `file` (relative to the root, or absolute inside it) checked by name and real path; absolute. */
export function confinedPath(workspace: Workspace, file: string): string {
  return workspace.resolve(path.isAbsolute(file) ? path.relative(workspace.root, file) : file);
}

/**
 * confinedPath for a file to read: a link at the file itself that leads out is the 'link' problem, as one that stays
 * inside is (a caller that shows a run without a linked telemetry.jsonl must not fail the run because the link leads out).
 */
function confinedFile(workspace: Workspace, file: string): string {
  try {
    return confinedPath(workspace, file);
  } catch (err) {
    const lexical = path.resolve(workspace.root, file);
    const rel = path.relative(workspace.root, lexical);
    let link = false;
    try {
      link = !rel.startsWith('..') && !path.isAbsolute(rel) && lstatSync(lexical).isSymbolicLink();
    } catch {
      // not there as a link either: the confinement's own error stands
    }
    if (!link) throw err;
    throw new WorkspaceFileError('link', shownPath(workspace, lexical), (err as Error).message, (err as ApiError).code);
  }
}

/** The file as messages name it: relative to the workspace. */
export function shownPath(workspace: Workspace, abs: string): string {
  return path.relative(workspace.root, abs) || '.';
}

function realRoot(workspace: Workspace): string {
  try {
    return realpathSync.native(workspace.root);
  } catch {
    return workspace.root;
  }
}

function openError(err: unknown, shown: string): WorkspaceFileError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new WorkspaceFileError('missing', shown, `${shown} does not exist`);
  // Still missing to every caller (nothing readable is there), but said as it is: a run folder that is a file.
  if (code === 'ENOTDIR') return new WorkspaceFileError('missing', shown, `${shown} cannot be reached: ${PATH_FAILURES.ENOTDIR}`);
  // ELOOP from O_NOFOLLOW: the last component is a link. (Linux gives ELOOP; some systems EMLINK.)
  if (code === 'ELOOP' || code === 'EMLINK') return new WorkspaceFileError('link', shown, `${shown} is a link: workspace files are read only as themselves, never through a link`);
  if (code === 'EISDIR') return new WorkspaceFileError('not-a-file', shown, `${shown} is a folder, not a file`);
  return cannotOpen(code, shown);
}


function writeFailure(err: unknown, shown: string): WorkspaceFileError {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  return new WorkspaceFileError('unwritable', shown, `${shown} could not be written: ${WRITE_FAILURES[code] ?? (err as Error).message}`);
}

/** A write's error as a person reads it where the disk or the file refused it (full, immutable); any other as it is. */
export function worded(err: unknown, shown: string): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code && Object.hasOwn(WRITE_FAILURES, code) ? writeFailure(err, shown) : err;
}

function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** After open: the opened file must be where its name says (a component swapped for a link meanwhile is caught). */
async function verifyOpened(workspace: Workspace, abs: string, handle: FileHandle, shown: string): Promise<void> {
  if (process.platform === 'linux') {
    const real = await fs.readlink(`/proc/self/fd/${handle.fd}`).catch(() => null);
    if (real !== null && !isWithin(realRoot(workspace), real)) throw new WorkspaceFileError('outside', shown, `${shown} leads outside the workspace`);
    return;
  }
  const [opened, named] = await Promise.all([handle.stat(), fs.lstat(abs).catch(() => null)]);
  if (!named || named.isSymbolicLink() || named.ino !== opened.ino || named.dev !== opened.dev) {
    throw new WorkspaceFileError('link', shown, `${shown} changed while it was opened (a link?): not read`);
  }
}

export interface OpenedFile {
  handle: FileHandle;
  size: number;
  /** As messages name it. */
  shown: string;
  /** Last modified, ms since the epoch (a zip entry's date). */
  mtimeMs: number;
}

/** Opens a regular file of the workspace for reading; the caller closes the handle. */
export async function openFile(workspace: Workspace, file: string): Promise<OpenedFile> {
  const abs = confinedFile(workspace, file);
  const shown = shownPath(workspace, abs);
  if (!NOFOLLOW) {
    const l = await fs.lstat(abs).catch((err: unknown) => {
      throw openError(err, shown);
    });
    if (l.isSymbolicLink()) throw new WorkspaceFileError('link', shown, `${shown} is a link: workspace files are read only as themselves, never through a link`);
  }
  const handle = await fs.open(abs, constants.O_RDONLY | NOFOLLOW | NONBLOCK).catch((err: unknown) => {
    throw openError(err, shown);
  });
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new WorkspaceFileError('not-a-file', shown, `${shown} is ${kindOf(st)}, not a regular file: not read`);
    await verifyOpened(workspace, abs, handle, shown);
    return { handle, size: st.size, shown, mtimeMs: st.mtimeMs };
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
}

function tooLarge(shown: string, size: number, maxBytes: number): WorkspaceFileError {
  const mb = (b: number) => (b >= MiB ? `${(b / MiB).toFixed(1)} MiB` : `${b} bytes`);
  return new WorkspaceFileError('too-large', shown, `${shown} is ${mb(size)}, more than the ${mb(maxBytes)} this reads: not read`);
}

/** A whole file, refused (naming its size) when larger than maxBytes. */
export async function readFileCapped(workspace: Workspace, file: string, maxBytes: number): Promise<Buffer> {
  const { handle, size, shown } = await openFile(workspace, file);
  try {
    if (size > maxBytes) throw tooLarge(shown, size, maxBytes);
    // One byte more than the cap: a file that grew since fstat is caught too.
    const buffer = Buffer.alloc(Math.min(maxBytes + 1, size + 1));
    let got = 0;
    while (got < buffer.length) {
      const { bytesRead } = await handle.read(buffer, got, buffer.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    if (got > maxBytes) throw tooLarge(shown, got, maxBytes);
    return buffer.subarray(0, got);
  } finally {
    await handle.close();
  }
}

export async function readTextCapped(workspace: Workspace, file: string, maxBytes: number): Promise<string> {
  return (await readFileCapped(workspace, file, maxBytes)).toString('utf8');
}

/** Objects and arrays inside one another, at most, in a JSON file of the workspace (Trainbench writes a few). */
export const MAX_JSON_DEPTH = 256;

/** A JSON file's value; a parse error names the file and the position, never its text; one nested too deep or with an array too long is refused unparsed. */
export async function readJsonCapped(workspace: Workspace, file: string, maxBytes: number, maxArrayEntries?: number): Promise<unknown> {
  const text = await readTextCapped(workspace, file, maxBytes);
  const shape = jsonShapeProblem(text, MAX_JSON_DEPTH, maxArrayEntries);
  if (shape) {
    // A 16 MiB manifest nested that deep cost a second of the server's time and its memory, for nothing.
    const shown = shownPath(workspace, confinedPath(workspace, file));
    throw new WorkspaceFileError('not-json', shown, `${shown} is ${shape}: not a file Trainbench wrote, so it is not read`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    const shown = shownPath(workspace, confinedPath(workspace, file));
    throw new WorkspaceFileError('not-json', shown, `${shown} is ${jsonProblem(err)}`);
  }
}

/**
 * The last at most maxBytes of a file, from its first whole line on (the line cut by
 * the window is dropped), for reading the end of a log that may be any size.
 */
export async function readTail(workspace: Workspace, file: string, maxBytes: number): Promise<string> {
  const { handle, size } = await openFile(workspace, file);
  try {
    const start = Math.max(0, size - maxBytes);
    const buffer = Buffer.alloc(size - start);
    let got = 0;
    while (got < buffer.length) {
      const { bytesRead } = await handle.read(buffer, got, buffer.length - got, start + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    const text = buffer.subarray(0, got).toString('utf8');
    return start > 0 ? text.slice(text.indexOf('\n') + 1) : text;
  } finally {
    await handle.close();
  }
}

/** A stream of an opened regular file of the workspace (bounded by its highWaterMark); closes the handle when done. */
export async function streamFile(workspace: Workspace, file: string, options: { encoding?: BufferEncoding; highWaterMark?: number } = {}) {
  const { handle } = await openFile(workspace, file);
  return createReadStream('', { fd: handle, autoClose: true, ...options });
}

/**
 * A stream of a regular file of the workspace, of the bytes it holds when opened (a log still
 * growing is read up to that size), refused (naming its size) over maxBytes.
 */
export async function streamFileBounded(workspace: Workspace, file: string, maxBytes: number): Promise<{ stream: Readable; size: number; shown: string; mtimeMs: number }> {
  const { handle, size, shown, mtimeMs } = await openFile(workspace, file);
  if (size > maxBytes || size === 0) {
    await handle.close();
    if (size > maxBytes) throw tooLarge(shown, size, maxBytes);
    return { stream: Readable.from([]), size, shown, mtimeMs };
  }
  return { stream: createReadStream('', { fd: handle, autoClose: true, start: 0, end: size - 1, highWaterMark: 256 * 1024 }), size, shown, mtimeMs };
}

export type EntryKind = 'file' | 'dir' | 'link' | 'other';
export interface FolderEntry {
  name: string;
  kind: EntryKind;
  /** For files; 0 for the rest. */
  bytes: number;
}

/** A folder's own kind, not followed: only a real folder is listed or written into. */
async function requireFolder(workspace: Workspace, dir: string): Promise<{ abs: string; shown: string }> {
  const abs = confinedPath(workspace, dir);
  const shown = shownPath(workspace, abs);
  const st = await fs.lstat(abs).catch((err: unknown) => {
    throw openError(err, shown);
  });
  if (st.isSymbolicLink()) throw new WorkspaceFileError('link', shown, `${shown} is a link: workspace folders are used only as themselves`);
  if (!st.isDirectory()) throw new WorkspaceFileError('not-a-folder', shown, `${shown} is not a folder`);
  return { abs, shown };
}

/**
 * Why `dir` is not a real folder of the workspace (missing, a link, a file, or a link that leads outside, which
 * confinement refuses first), or null when it is one.
 */
export async function folderProblem(workspace: Workspace, dir: string): Promise<ApiError | null> {
  try {
    await requireFolder(workspace, dir);
    return null;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

/** Whether `dir` is a real folder of the workspace (not a link to one, not a file). */
export async function isFolder(workspace: Workspace, dir: string): Promise<boolean> {
  return requireFolder(workspace, dir).then(
    () => true,
    () => false,
  );
}

/** Entries a listing keeps by default: a planted folder of millions of names would otherwise fill memory. */
export const LIST_KEEP = 100_000;
/** Names read past the kept ones before the scan stops, so a huge folder costs bounded time too. */
const LIST_SCAN = 1_000_000;

/** A folder's entries (at most `keep`, by name) and how many more it holds, which `omittedAtLeast` says is a lower bound. */
export interface FolderListing {
  entries: FolderEntry[];
  omitted: number;
  omittedAtLeast: boolean;
}

/**
 * A folder's entries, by name, each with its own kind (links are not followed: they are
 * listed as links, for the caller to show as a problem). A missing folder has none.
 * Read as a stream, keeping the first `keep` names in order; at most `keep + scan` names are read.
 */
export async function listFolderBounded(workspace: Workspace, dir: string, { keep = LIST_KEEP, scan = LIST_SCAN } = {}): Promise<FolderListing> {
  // Read through the folder held open (on Linux: its fd), never by its name again: a folder swapped for a link
  // after the check would otherwise list (and size) what the link leads to, outside the workspace too.
  let held: HeldFolder;
  try {
    held = holdFolder(workspace, (await requireFolder(workspace, dir)).abs);
  } catch (err) {
    if (isMissing(err)) return { entries: [], omitted: 0, omittedAtLeast: false };
    throw err;
  }
  try {
    return await listHeld(held, keep, scan);
  } finally {
    held.close();
  }
}

async function listHeld(held: HeldFolder, keep: number, scan: number): Promise<FolderListing> {
  // The first `keep` names in order, in bounded memory: gathered up to twice as many, then sorted and cut back.
  let kept: { name: string; kind: EntryKind }[] = [];
  const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  let seen = 0;
  let omittedAtLeast = false;
  const folder = await fs.opendir(held.entry('.'), { bufferSize: 256 });
  try {
    for await (const e of folder) {
      if (++seen > keep + scan) {
        omittedAtLeast = true;
        seen--;
        break;
      }
      kept.push({ name: e.name, kind: e.isSymbolicLink() ? 'link' : e.isDirectory() ? 'dir' : e.isFile() ? 'file' : 'other' });
      if (kept.length >= 2 * keep) kept = kept.sort(byName).slice(0, keep);
    }
  } finally {
    // A loop left early has closed it already, and closing twice throws.
    try {
      await folder.close();
    } catch {
      /* closed */
    }
  }
  kept = kept.sort(byName).slice(0, keep);
  const omitted = seen - kept.length;
  const entries: FolderEntry[] = [];
  for (const e of kept) {
    const bytes = e.kind === 'file' ? ((await fs.lstat(held.entry(e.name)).catch(() => null))?.size ?? 0) : 0;
    entries.push({ ...e, bytes });
  }
  return { entries, omitted, omittedAtLeast };
}

/** listFolderBounded's entries, for callers that look for names they know (runs, reports, models, caches). */
export async function listFolder(workspace: Workspace, dir: string): Promise<FolderEntry[]> {
  return (await listFolderBounded(workspace, dir)).entries;
}

/** Why an entry of a list cannot be used, in words, or null for a usable one of the wanted kind. */
export function entryProblem(entry: FolderEntry, want: 'file' | 'dir'): string | null {
  if (entry.kind === want) return null;
  if (entry.kind === 'link') return `${entry.name} is a link: the workspace uses its entries only as themselves`;
  return `${entry.name} is ${entry.kind === 'dir' ? 'a folder' : entry.kind === 'file' ? 'a file' : 'a special file (FIFO, socket or device)'}, not ${want === 'dir' ? 'a folder' : 'a file'}`;
}

/** Runs `use` on a folder of the workspace held open (see held-folder.ts), closing it after. */
async function inFolder<T>(workspace: Workspace, abs: string, use: (folder: HeldFolder) => Promise<T>, options: { create?: boolean } = {}): Promise<T> {
  const folder = holdFolder(workspace, abs, options);
  try {
    return await use(folder);
  } catch (err) {
    throw namedByFolder(err, folder.entry(''), abs);
  } finally {
    folder.close();
  }
}

/**
 * A system call's error on an entry of a held folder names it by the folder's path, not by /proc/self/fd/N/, which
 * an answer would show as a folder "…/N" outside the workspace (fourth re-attack of issue 41).
 */
function namedByFolder(err: unknown, held: string, abs: string): unknown {
  const e = err as NodeJS.ErrnoException & { dest?: string };
  if (!held.startsWith('/proc/self/fd/') || typeof e?.path !== 'string') return err;
  const named = (p: string) => (p.startsWith(held) ? path.join(abs, p.slice(held.length)) : p);
  e.message = e.message.split(held).join(`${abs}${path.sep}`);
  e.path = named(e.path);
  if (typeof e.dest === 'string') e.dest = named(e.dest);
  return e;
}

/** Creates a folder (and its parents) inside the workspace, one at a time, each inside the one held; refuses when any part is a link or a file. */
export async function makeFolder(workspace: Workspace, dir: string): Promise<string> {
  const abs = confinedPath(workspace, dir);
  holdFolder(workspace, abs, { create: true }).close();
  return abs;
}

/**
 * A folder the person chose in a trusted shell (the desktop app's dialog, the CLI's --out),
 * which may lie outside the workspace: created if missing. Never reached from the contract.
 */
export async function makeChosenFolder(abs: string): Promise<void> {
  // One level at a time from the deepest folder there: Node's recursive mkdir spins for ever where the system answers
  // ENOENT under a folder that exists (/proc/self/x took 90% of a core, seventh re-attack of issue 41).
  const missing: string[] = [];
  for (let at = path.resolve(abs); ; at = path.dirname(at)) {
    const st = await fs.stat(at).catch((err: NodeJS.ErrnoException) => err);
    if (!(st instanceof Error)) {
      if (!st.isDirectory()) throw new ApiError('E_BAD_INPUT', `cannot create ${abs}: ${at} is ${st.isFile() ? 'a file' : kindOf(st)}, not a folder`);
      break;
    }
    if (st.code !== 'ENOENT') throw new ApiError('E_BAD_INPUT', `cannot create ${abs}: ${failureReason(st.code) ?? st.message}`);
    // A link to nothing is there, not missing: made "through" it, the next step failed with a raw ENOENT and a temp name.
    if ((await fs.lstat(at).catch(() => null))?.isSymbolicLink()) throw new ApiError('E_BAD_INPUT', `cannot create ${abs}: ${at} is a link that leads nowhere`);
    missing.unshift(at);
    if (path.dirname(at) === at) break;
  }
  for (const dir of missing) {
    await fs.mkdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST') return;
      const why = err.code === 'ENOENT' ? `${path.dirname(dir)} does not take new folders` : (failureReason(err.code) ?? err.message);
      throw new ApiError('E_BAD_INPUT', `cannot create ${abs}: ${why}`);
    });
  }
}

/**
 * The folder a command will run in as the system enters it, links followed (what a person agrees to), or null when
 * it cannot be entered (then nothing runs there). A planted link with ".." after it named the person's own project
 * when resolved as text, while the command ran in the planted one (eighth re-attack of issue 41).
 */
export function realFolderOf(abs: string): string | null {
  try {
    return realpathSync.native(abs);
  } catch {
    return null;
  }
}

/**
 * Writes a file the person named (the CLI's --out), replacing what is there, in words when it cannot: a FIFO or a
 * socket at the name is refused rather than waited on (a FIFO planted where they export hung the CLI), except one
 * they name as a stream of their own (/dev/stdout, /proc/self/fd/N).
 */
export async function writeChosenFile(abs: string, text: string): Promise<void> {
  await makeChosenFolder(path.dirname(abs));
  const st = await fs.stat(abs).catch(() => null);
  const stream = /^\/(dev|proc\/self\/fd)\//.test(abs);
  if (st && (st.isDirectory() || ((st.isFIFO() || st.isSocket()) && !stream))) throw new ApiError('E_BAD_INPUT', `cannot write ${abs}: it is ${kindOf(st)}, not a file`);
  const failed = (err: NodeJS.ErrnoException) => new ApiError('E_DATA', `cannot write ${abs}: ${failureReason(err.code) ?? err.message}`);
  const handle = await fs.open(abs, 'w').catch((err: NodeJS.ErrnoException) => {
    throw failed(err);
  });
  try {
    await handle.writeFile(text).catch((err: NodeJS.ErrnoException) => {
      throw failed(err);
    });
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * Why a script's working directory (the person's own folder, inside the workspace or not) cannot be one, or null.
 * Only stat: nothing is read from it.
 */
export async function workingDirectoryProblem(abs: string): Promise<string | null> {
  const shown = `the working directory ${JSON.stringify(abs)}`;
  const stat = await fs.stat(abs).catch((err: NodeJS.ErrnoException) => err);
  if (stat instanceof Error) {
    const why = Object.hasOwn(PATH_FAILURES, stat.code ?? '') ? PATH_FAILURES[stat.code!] : null;
    return why ? `${shown} cannot be used: ${why}` : `${shown} does not exist`;
  }
  return stat.isDirectory() ? null : `${shown} is not a folder`;
}

/** A lookup's error said of the path as shown, when PATH_FAILURES words it; any other as it is. */
function pathFailure(err: NodeJS.ErrnoException, shown: string): unknown {
  const why = Object.hasOwn(PATH_FAILURES, err.code ?? '') ? PATH_FAILURES[err.code!] : null;
  return why ? new WorkspaceFileError('unreadable', shown, `${shown} cannot be used: ${why}`, 'E_BAD_INPUT') : err;
}

/**
 * Creates one new folder in a real folder of the workspace, exclusively: EEXIST (as the
 * ErrnoException it is) when the name is taken, by anything, a link included.
 */
export async function makeFolderExclusive(workspace: Workspace, dir: string): Promise<string> {
  const named = path.resolve(workspace.root, path.isAbsolute(dir) ? path.relative(workspace.root, dir) : dir);
  const parent = confinedPath(workspace, path.dirname(named));
  return inFolder(workspace, parent, async (folder) => {
    folder.verify();
    await fs.mkdir(folder.entry(path.basename(named)));
    return path.join(parent, path.basename(named));
  });
}

/** Removes an empty folder made by makeFolderExclusive; quietly does nothing when it is gone. */
export async function removeEmptyFolder(workspace: Workspace, dir: string): Promise<void> {
  try {
    const abs = entryPath(workspace, dir);
    await inFolder(workspace, path.dirname(abs), (folder) => fs.rmdir(folder.entry(path.basename(abs))));
  } catch {
    // gone already, or not ours to remove
  }
}

/**
 * Writes a file by a fresh temp file (O_EXCL: never an existing one) renamed over the name,
 * in a real folder of the workspace: readers never see half a file, and a link planted at
 * the name is replaced, never written through.
 */
export async function writeFileConfined(workspace: Workspace, file: string, data: string | Uint8Array): Promise<void> {
  // The name is not followed (the rename replaces whatever is there); its folder must be a real one inside.
  const abs = entryPath(workspace, file);
  await inFolder(workspace, path.dirname(abs), (folder) => writeFileAtomicIn(folder, path.basename(abs), data)).catch((err: NodeJS.ErrnoException) => {
    const shown = shownPath(workspace, abs);
    // The disk or the file refused the write (full, immutable): said of the file, never of the temp name it went through.
    const said = worded(err, shown);
    if (said !== err) throw said;
    // A folder at the name (a copied or tampered workspace): the file's problem in words, not an internal error.
    if (err.code !== 'EISDIR' && err.code !== 'ENOTEMPTY') throw err;
    throw new WorkspaceFileError('not-a-file', shown, `${shown} is a folder, not a file: move it away to let the workbench write the file`);
  });
}

/** What is at a workspace entry's name, not followed: null when nothing is. */
export async function entryKind(workspace: Workspace, entry: string): Promise<EntryKind | null> {
  const abs = entryPath(workspace, entry);
  const st = await fs.lstat(abs).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw pathFailure(err, shownPath(workspace, abs));
  });
  if (!st) return null;
  return st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
}

/**
 * Writes a new file, whole or not at all, refusing a name that is taken by anything (a file, a folder,
 * a link): a fresh temp file is hard-linked to the name (link(2) never replaces, so two writers
 * cannot both win), then removed. Where the file system has no hard links, the name is created
 * exclusively and written. EEXIST (as the ErrnoException it is) when the name is taken.
 */
export async function writeNewFileConfined(workspace: Workspace, file: string, data: string | Uint8Array): Promise<void> {
  const abs = entryPath(workspace, file);
  await inFolder(workspace, path.dirname(abs), async (folder) => {
    const target = folder.entry(path.basename(abs));
    const tmp = await writeTempIn(folder, path.basename(abs), data);
    try {
      try {
        await fs.link(tmp, target);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw err;
        const out = await fs.open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, 0o644);
        try {
          await out.writeFile(data);
        } finally {
          await out.close();
        }
      }
    } finally {
      await fs.rm(tmp, { force: true });
    }
  }).catch((err: unknown) => {
    // The disk or the folder refused it (full, immutable): said of the file, never of its temp name (second re-attack of
    // issue 41); a name taken stays the EEXIST callers look for.
    throw worded(err, shownPath(workspace, abs));
  });
}

/** The EEXIST a taken name gives, as the ErrnoException link(2) throws, for a name seen taken before a byte is written. */
function nameTaken(shown: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`EEXIST: ${shown} exists already`), { code: 'EEXIST' });
}

/** A name Trainbench was to create in a folder of its own, taken meanwhile (a file, link or folder put there). */
const plantedAt = (shown: string) => new WorkspaceFileError('unwritable', shown, `${shown} exists already: something was put there while Trainbench wrote this folder; it is not written over`);
const isTaken = (err: unknown) => (err as NodeJS.ErrnoException).code === 'EEXIST';

export interface StreamedWriteOptions {
  /** More bytes than this are refused: the stream is not read on. */
  maxBytes: number;
  /** The error for a stream that passed maxBytes, given the bytes it had sent by then. */
  tooLarge: (received: number) => Error;
  /** Stops the write between chunks; a caller whose stream may wait also ends the stream (addAbortSignal). */
  signal?: AbortSignal;
  /** The bytes written so far, after each chunk. */
  onBytes?: (written: number) => void;
}

/**
 * Writes a new file from a stream (an upload, a copy from outside the workspace), whole or not at all: each
 * chunk goes into a fresh temp file (O_EXCL, never through a link) in a real folder of the workspace held
 * open, before the next is read, so memory stays one chunk whatever the size; only when the stream has ended
 * is the temp file hard-linked to the name (link(2) never replaces) and removed. A refusal (over maxBytes),
 * an abort, a stream error or a taken name removes the temp file, so no partial file is ever visible under
 * the name. The folder is created when missing. EEXIST (as an ErrnoException) when the name is taken,
 * checked before the first byte and again by the link. Answers the bytes written.
 */
export async function writeNewFileStreamed(workspace: Workspace, file: string, chunks: AsyncIterable<Uint8Array>, options: StreamedWriteOptions): Promise<number> {
  const abs = entryPath(workspace, file);
  const name = path.basename(abs);
  const shown = shownPath(workspace, abs);
  return inFolder(
    workspace,
    path.dirname(abs),
    async (folder) => {
      const target = folder.entry(name);
      if (await fs.lstat(target).then(() => true, () => false)) throw nameTaken(shown);
      options.signal?.throwIfAborted();
      // Short whatever the name: a legal name of 255 bytes must not make a temp name over the file system's limit.
      const tmpName = `.${Buffer.from(name).subarray(0, 64).toString('utf8').replace(/\uFFFD+$/, '')}.${randomBytes(6).toString('hex')}.part`;
      const tmp = folder.entry(tmpName);
      try {
        const out = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, 0o644);
        let written = 0;
        let made: { name: string; dev: bigint; ino: bigint };
        try {
          for await (const chunk of chunks) {
            options.signal?.throwIfAborted();
            if (written + chunk.byteLength > options.maxBytes) throw options.tooLarge(written + chunk.byteLength);
            for (let at = 0; at < chunk.byteLength; ) at += (await out.write(chunk, at, chunk.byteLength - at)).bytesWritten;
            written += chunk.byteLength;
            options.onBytes?.(written);
          }
          options.signal?.throwIfAborted();
          const st = await out.stat({ bigint: true });
          made = { name: tmpName, dev: st.dev, ino: st.ino };
        } finally {
          await out.close();
        }
        folder.verify(made);
        try {
          await fs.link(tmp, target);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw err;
          // No hard links here: a rename, after one more look at the name (a writer racing in between is not excluded).
          if (await fs.lstat(target).then(() => true, () => false)) throw nameTaken(shown);
          await renameReplacing(tmp, target);
        }
        return written;
      } catch (err) {
        throw worded(err, shown); // a full disk while the bytes came: said of the file, not its temp name
      } finally {
        await fs.rm(tmp, { force: true });
      }
    },
    { create: true },
  );
}

/** Bytes free to an unprivileged writer on the disk that holds the workspace. */
export async function workspaceFreeBytes(workspace: Workspace): Promise<number> {
  const st = await fs.statfs(workspace.root);
  return st.bavail * st.bsize;
}

export function writeJsonConfined(workspace: Workspace, file: string, value: unknown): Promise<void> {
  return writeFileConfined(workspace, file, JSON.stringify(value, null, 2) + '\n');
}

/**
 * For a file another process saves by name (the engine's checkpoint): a name in the workspace is checked only once,
 * and a folder swapped for a link while that process works would take its file outside. `save` gets a name in a fresh
 * private folder outside the workspace instead; once it has resolved, the file is copied into `file` through its
 * folder held open, whole or not at all. The private folder is removed whatever happened. Answers `save`'s answer.
 */
export async function writtenByAnotherProcess<T>(workspace: Workspace, file: string, save: (staged: string) => Promise<T>): Promise<T> {
  const staging = await fs.mkdtemp(path.join(os.tmpdir(), 'trainbench-staged-'));
  try {
    const staged = path.join(staging, path.basename(file));
    const answer = await save(staged);
    await writeNewFileStreamed(workspace, file, createReadStream(staged), {
      maxBytes: Number.MAX_SAFE_INTEGER, // the workbench's own process wrote it
      tooLarge: (received) => new ApiError('E_INTERNAL', `${file} passed ${received} bytes`),
    }).catch((err: unknown) => {
      throw isTaken(err) ? plantedAt(shownPath(workspace, path.resolve(workspace.root, file))) : err;
    });
    return answer;
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
  }
}

/**
 * Copies a workspace file to `to` by streaming from the opened source into a fresh temp file beside `to`, renamed
 * over it: neither a link at the source nor one at the destination is followed. A destination inside the workspace
 * (serve mode's export) is written through its folder held open, as every confined write is, so a folder swapped for
 * a link meanwhile is refused; one outside (the person's own folder, chosen in a trusted shell) by name.
 */
export async function copyFileOut(workspace: Workspace, from: string, to: string): Promise<void> {
  const dir = path.dirname(to);
  const name = path.basename(to);
  const copied = isWithin(workspace.root, dir)
    ? inFolder(workspace, dir, (folder) => copyInto(workspace, from, (n) => folder.entry(n), name, (made) => folder.verify(made)))
    : copyInto(workspace, from, (n) => path.join(dir, n), name, () => undefined);
  await copied.catch((err: unknown) => {
    throw copyFailure(err, workspace, to);
  });
}

/** A copy's write refused by the disk (full, read-only...) in words naming the destination: its error has no path. */
function copyFailure(err: unknown, workspace: Workspace, to: string): unknown {
  return worded(err, isWithin(workspace.root, to) ? shownPath(workspace, to) : to);
}

async function copyInto(workspace: Workspace, from: string, entry: (name: string) => string, name: string, verify: (made: Made) => void): Promise<void> {
  const source = await openFile(workspace, from);
  const tmpName = `.${Buffer.from(name).subarray(0, 64).toString('utf8').replace(/\uFFFD+$/, '')}.${randomBytes(6).toString('hex')}.tmp`;
  const tmp = entry(tmpName);
  let out: FileHandle | null = null;
  try {
    out = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, 0o644);
    const st = await out.stat({ bigint: true });
    const chunk = Buffer.alloc(Math.min(MiB, Math.max(1, source.size)));
    for (let at = 0; ; ) {
      const { bytesRead } = await source.handle.read(chunk, 0, chunk.length, at);
      if (bytesRead === 0) break;
      await out.write(chunk, 0, bytesRead);
      at += bytesRead;
    }
    await out.close();
    out = null;
    verify({ name: tmpName, dev: st.dev, ino: st.ino });
    await renameReplacing(tmp, entry(name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EISDIR' || err.code === 'ENOTEMPTY' || err.code === 'EEXIST') {
        throw new ApiError('E_BAD_INPUT', `${name} is a folder in the export folder: move it away or export elsewhere`);
      }
      throw err;
    });
  } catch (err) {
    await out?.close().catch(() => undefined);
    await fs.rm(tmp, { force: true });
    throw err;
  } finally {
    await source.handle.close();
  }
}

/** A new file in a real folder of the workspace, opened for writing at any offset (a cache's shards); EEXIST when the name is taken. */
export async function createFile(workspace: Workspace, file: string): Promise<FileHandle> {
  const named = path.resolve(workspace.root, path.isAbsolute(file) ? path.relative(workspace.root, file) : file);
  return inFolder(workspace, confinedPath(workspace, path.dirname(named)), async (folder) => {
    const name = path.basename(named);
    const handle = await fs.open(folder.entry(name), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, 0o644).catch((err: unknown) => {
      throw isTaken(err) ? plantedAt(shownPath(workspace, named)) : err;
    });
    try {
      const st = await handle.stat({ bigint: true });
      folder.verify({ name, dev: st.dev, ino: st.ino });
      return handle;
    } catch (err) {
      await handle.close().catch(() => undefined);
      await fs.rm(folder.entry(name), { force: true });
      throw err;
    }
  });
}

/** The file each stream of createFileWriteStream opened, so its owner can ask whether the file is still at its name. */
const openedFiles = new WeakMap<WriteStream, { dev: bigint; ino: bigint }>();

/** Whether the file `stream` writes is still at `file`: not removed, moved or replaced (its folder with it) since it was opened. */
export async function stillAtName(workspace: Workspace, file: string, stream: WriteStream): Promise<boolean> {
  const opened = openedFiles.get(stream);
  if (!opened) return true;
  try {
    const named = await fs.lstat(entryPath(workspace, file), { bigint: true });
    return named.dev === opened.dev && named.ino === opened.ino;
  } catch {
    return false; // gone, or its folder is (or leads outside now)
  }
}

/**
 * A write stream on a file of the workspace (a run's log, events or telemetry): created if
 * missing, appended to when `append`, else created fresh (an existing file is an error: these
 * files belong to a folder the run made itself). Never through a link at the name, never a
 * FIFO or device; synchronous, as the callers open it where a stream must exist at once.
 */
export function createFileWriteStream(workspace: Workspace, file: string, options: { append?: boolean; onError?: (err: WorkspaceFileError) => void } = {}): WriteStream {
  const abs = confinedPath(workspace, file);
  const shown = shownPath(workspace, abs);
  const mode = options.append ? constants.O_APPEND : constants.O_EXCL;
  const folder = holdFolder(workspace, path.dirname(abs));
  let fd: number;
  try {
    fd = openSync(folder.entry(path.basename(abs)), constants.O_WRONLY | constants.O_CREAT | mode | NOFOLLOW | NONBLOCK, 0o644);
  } catch (err) {
    folder.close();
    throw openError(err, shown);
  }
  let opened: { dev: bigint; ino: bigint };
  try {
    const st = fstatSync(fd, { bigint: true });
    opened = { dev: st.dev, ino: st.ino };
    if (!st.isFile()) throw new WorkspaceFileError('not-a-file', shown, `${shown} is ${kindOf(st)}, not a regular file: not written`);
    // A hard link has no link to see: its other name may be a file outside the workspace (a planted run folder).
    if (st.nlink > 1n) throw new WorkspaceFileError('link', shown, `${shown} has ${st.nlink} names (hard links), one of which may lie outside the workspace: not written`);
    folder.verify({ name: path.basename(abs), dev: st.dev, ino: st.ino });
    if (process.platform === 'linux') {
      const real = (() => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return null;
        }
      })();
      if (real !== null && !isWithin(realRoot(workspace), real)) throw new WorkspaceFileError('outside', shown, `${shown} leads outside the workspace: not written`);
    }
  } catch (err) {
    closeSync(fd);
    throw err;
  } finally {
    folder.close();
  }
  const stream = createWriteStream('', { fd, autoClose: true });
  openedFiles.set(stream, opened);
  // A write that fails once the file is open (a full disk, a file made immutable) emits 'error', which unheard ends
  // the process, every job in it. It goes to onError, worded; the stream's end() callback gets it too.
  stream.on('error', (err) => options.onError?.(writeFailure(err, shown)));
  return stream;
}

/**
 * An entry's path for operations on the entry itself (rm, rename), which never follow its last
 * component: the parent confined by real path, the name by name only.
 */
function entryPath(workspace: Workspace, entry: string): string {
  const named = path.resolve(workspace.root, path.isAbsolute(entry) ? path.relative(workspace.root, entry) : entry);
  if (!isWithin(workspace.root, named) || named === workspace.root) throw new WorkspaceFileError('outside', entry, `${entry} is not inside the workspace`);
  return path.join(confinedPath(workspace, path.dirname(named)), path.basename(named));
}

/** Deeper than this, a folder is not removed: each level holds a handle open, and no folder the workbench makes is nested a tenth as deep. */
const MAX_REMOVE_DEPTH = 256;

const gone = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Removes the entry `at` names (a path through a held folder, /proc/self/fd/<fd>/<name>): a folder is opened
 * O_NOFOLLOW and emptied through its own handle, so a subfolder swapped for a link while it is being removed
 * (by a process that can write the workspace) is removed as the link, never walked into, and every name is
 * resolved in the folder held, never by walking the path again as fs.rm does.
 */
async function removeHeld(at: string, shown: string, depth: number): Promise<void> {
  let fd: number;
  try {
    fd = openSync(at, constants.O_RDONLY | constants.O_DIRECTORY | NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code !== 'ENOTDIR' && code !== 'ELOOP') throw err;
    await fs.unlink(at).catch((e: unknown) => {
      if (!gone(e)) throw e;
    }); // a file, or a link (removed as the link)
    return;
  }
  try {
    if (depth >= MAX_REMOVE_DEPTH) throw new WorkspaceFileError('not-a-folder', shown, `${shown} holds folders nested more than ${MAX_REMOVE_DEPTH} deep: not removed`);
    const held = `/proc/self/fd/${fd}`;
    for (const name of await fs.readdir(held)) await removeHeld(path.join(held, name), `${shown}/${name}`, depth + 1);
  } finally {
    closeSync(fd);
  }
  await fs.rmdir(at).catch((e: unknown) => {
    if (!gone(e)) throw e;
  });
}

/** Removes a file or folder of the workspace (a link is removed as the link, never what it points to; rm follows no link inside a folder either). */
export async function removeEntry(workspace: Workspace, entry: string): Promise<void> {
  const abs = entryPath(workspace, entry);
  let folder: HeldFolder;
  try {
    folder = holdFolder(workspace, path.dirname(abs));
  } catch (err) {
    if (isMissing(err)) return; // nothing there to remove
    throw err;
  }
  try {
    folder.verify();
    const entry = folder.entry(path.basename(abs));
    if (throughProcFd()) await removeHeld(entry, shownPath(workspace, abs), 0);
    else await fs.rm(entry, { recursive: true, force: true });
  } finally {
    folder.close();
  }
}

/** Renames within the workspace; a link at either name is moved or replaced as the link. */
export async function renameEntry(workspace: Workspace, from: string, to: string): Promise<void> {
  const [a, b] = [entryPath(workspace, from), entryPath(workspace, to)];
  await inFolder(workspace, path.dirname(a), (source) =>
    inFolder(workspace, path.dirname(b), async (target) => {
      source.verify();
      target.verify();
      await renameReplacing(source.entry(path.basename(a)), target.entry(path.basename(b)));
    }),
  );
}
