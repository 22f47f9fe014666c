/**
 * A file system's refusals in words, for every answer and message: the disk, the folder or the path is what a person
 * has to see to, not an errno. Shared by the workspace's own writes (core/workspace) and the last guard in
 * toApiError, where any refusal a write path did not word itself is worded on its way out.
 */

/** Why the file system refused a write. */
export const WRITE_FAILURES: Record<string, string> = {
  ENOSPC: 'no space left on the disk',
  EDQUOT: 'the disk quota is used up',
  EFBIG: 'the file is larger than the file system allows',
  EIO: 'the disk reported an input/output error',
  EPERM: 'the file system refused the change (a file made immutable, or held by another program)',
  EACCES: 'permission denied',
  EROFS: 'the file system is read-only',
  EBUSY: 'it is in use (a mount point, or held open by another program)',
};

/** Why a path names nothing a system call can reach (ENOENT aside: each caller says "missing" its own way). */
export const PATH_FAILURES: Record<string, string> = {
  ENOTDIR: 'a part of its path is a file, not a folder',
  ENAMETOOLONG: 'its name is longer than the file system allows',
  ELOOP: 'its path goes through links that loop',
  EACCES: 'permission denied',
};

/** Why an open was refused by what the path names or by the process's limits, not by the path itself. */
export const OPEN_FAILURES: Record<string, string> = {
  // open(2) of a socket, of a FIFO for writing with no reader, or of a device with nothing behind it.
  ENXIO: 'it is a socket, a FIFO nobody reads or a device with nothing behind it, not a regular file',
  EMFILE: 'Trainbench has too many files open at once right now; try again when the work in progress has finished',
  ENFILE: 'the system has too many files open at once right now; try again later',
};

/** A refusal's reason in words when its code has one, else null. */
export function failureReason(code: string | undefined): string | null {
  if (!code) return null;
  for (const table of [PATH_FAILURES, WRITE_FAILURES, OPEN_FAILURES]) if (Object.hasOwn(table, code)) return table[code];
  return null;
}

/**
 * A file as a message names it: Trainbench's own working names (a temp file `.NAME.<hex>.tmp` renamed over NAME
 * when written, a claim or a folder on its way out) as what they stand for, so no answer shows one.
 */
function shownFile(file: string): string {
  const sep = Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\'));
  const folder = file.slice(0, sep + 1);
  const name = file.slice(sep + 1);
  const temp = /^\.(.+)\.[0-9a-f]{12}\.tmp$/.exec(name);
  if (temp) return folder + temp[1];
  return name.startsWith('.') && folder ? folder : file;
}

/**
 * An error from a system call on a file, in words ("reports/x.md: no space left on the disk"), or null for any other:
 * one without a path (kill, a socket) or from spawn (whose path is the command) is not the file system's.
 */
export function fileSystemFailure(err: unknown): string | null {
  const e = err as { code?: unknown; path?: unknown; syscall?: unknown } | null;
  if (typeof e?.code !== 'string' || typeof e.syscall !== 'string' || typeof e.path !== 'string' || e.syscall.startsWith('spawn')) return null;
  // ENOENT is not among them: a file gone from under a write is more often a fault of ours than the disk's, and stays
  // an unexpected error.
  const why = failureReason(e.code);
  return why === null ? null : `${shownFile(e.path)}: ${why}`;
}
