import { close, constants, createReadStream, fstatSync, lstatSync, open, promises as fs, read, readlinkSync, realpathSync, type ReadStream } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

import { ApiError } from '../../../api/errors';

/**
 * How every importer opens a source file: never blocking in open() (a FIFO swapped in for a file
 * after it was checked gives an empty read, not a hung thread-pool thread).
 */
const SOURCE_OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

/**
 * A source's path as importers take it: its real path, no link in it (the dataset service hands them
 * the one confinement checked). A missing file keeps its name: its open says it is missing.
 */
export function realSourcePath(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
}

/**
 * Whether the file open at `fd` is the one its real path names: a component swapped for a link between
 * the check of the path and the open (another local process writing the workspace) would have opened
 * whatever the link leads to, outside the workspace too. Where /proc/self/fd is missing, the name must
 * still be that file, not a link.
 */
function openedAsNamed(p: string, fd: number): boolean {
  if (process.platform === 'linux') {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === p;
    } catch {
      // no /proc: checked by name below
    }
  }
  try {
    const named = lstatSync(p, { bigint: true });
    const opened = fstatSync(fd, { bigint: true });
    return !named.isSymbolicLink() && named.dev === opened.dev && named.ino === opened.ino;
  } catch {
    return false;
  }
}

function swapped(p: string): ApiError {
  return new ApiError('E_BAD_INPUT', `${p} changed while it was opened (swapped for a link?): not read`);
}

/** A source file opened for reading, and checked to be the file its real path names; the caller closes it. */
export async function openSourceFile(p: string): Promise<FileHandle> {
  const fh = await fs.open(p, SOURCE_OPEN_FLAGS);
  if (!openedAsNamed(p, fh.fd)) {
    await fh.close();
    throw swapped(p);
  }
  return fh;
}

/** The file system a source stream opens through: its open is checked as openSourceFile's is. */
const checkedFs = {
  open(p: string, flags: number, mode: number, cb: (err: NodeJS.ErrnoException | null, fd?: number) => void): void {
    open(p, SOURCE_OPEN_FLAGS, mode, (err, fd) => {
      if (err) return cb(err);
      if (openedAsNamed(p, fd)) return cb(null, fd);
      close(fd, () => cb(swapped(p) as unknown as NodeJS.ErrnoException));
    });
  },
  read,
  close,
};

/** A stream of a source file, opened as openSourceFile opens one. */
export function openSourceStream(path: string, options: { start?: number; end?: number; highWaterMark?: number } = {}): ReadStream {
  return createReadStream(path, { ...options, fs: checkedFs });
}

/** What a person should hear for the file system errors a source file can raise, after "cannot read <path>: ". */
const PROBLEMS: Record<string, string> = {
  ENOENT: 'it does not exist; check the path',
  EISDIR: 'it is a directory, not a file; choose a file inside it',
  EACCES: 'permission denied, this user cannot read it; check its permissions (chmod +r)',
  EPERM: 'permission denied, this user cannot read it; check its permissions (chmod +r)',
  ENOTDIR: 'a part of the path is not a directory; check the path',
  ENAMETOOLONG: 'a name in the path is longer than the file system allows (255 bytes for one name); check the path',
  ELOOP: 'its path goes through links that loop; check the path',
  // open(2) of a socket: a sixth re-attack planted one in sources/ and read Node's own words back.
  ENXIO: 'it is a socket or a device, not a regular file; import from a file',
  EMFILE: 'Trainbench has too many files open at once right now; try again when the work in progress has finished',
  ENFILE: 'the system has too many files open at once right now; try again later',
  EIO: 'the disk reported an input/output error',
};

/** A file system error on a source file, as a contract error naming the file (E_BAD_INPUT: the path is the problem). */
export function sourceFileError(path: string, err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as NodeJS.ErrnoException;
  const problem = e.code && Object.hasOwn(PROBLEMS, e.code) ? PROBLEMS[e.code] : undefined;
  if (!problem) return new ApiError('E_DATA', `cannot read ${path}: ${e.message}`);
  return new ApiError(e.code === 'EMFILE' || e.code === 'ENFILE' || e.code === 'EIO' ? 'E_DATA' : 'E_BAD_INPUT', `cannot read ${path}: ${problem}`);
}

/**
 * Size of a source file, after checking that it is a regular file this process
 * can open for reading, so a directory or a locked file is refused up front
 * rather than by a stream halfway through an import.
 */
export async function sourceFileSize(path: string): Promise<number> {
  try {
    // The opened file is the one checked: fstat, not a stat of the path before it.
    const fh = await openSourceFile(path);
    try {
      const stat = await fh.stat();
      if (stat.isDirectory()) throw sourceFileError(path, { code: 'EISDIR' });
      if (!stat.isFile()) throw new ApiError('E_BAD_INPUT', `${path} is not a regular file (a device, pipe or socket): import from a file`);
      return stat.size;
    } finally {
      await fh.close();
    }
  } catch (err) {
    throw sourceFileError(path, err);
  }
}
