import { constants, createReadStream, promises as fs, type ReadStream } from 'node:fs';

import { ApiError } from '../../../api/errors';

/**
 * How every importer opens a source file: never blocking in open() (a FIFO swapped in for a file
 * after it was checked gives an empty read, not a hung thread-pool thread).
 */
export const SOURCE_OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

/** A stream of a source file opened with SOURCE_OPEN_FLAGS (numeric flags work; Node's types name only strings). */
export function openSourceStream(path: string, options: { start?: number; end?: number; highWaterMark?: number } = {}): ReadStream {
  return createReadStream(path, { ...options, flags: SOURCE_OPEN_FLAGS as unknown as string });
}

/** What a person should hear for the file system errors a source file can raise, after "cannot read <path>: <CODE>". */
const PROBLEMS: Record<string, string> = {
  ENOENT: 'it does not exist; check the path',
  EISDIR: 'it is a directory, not a file; choose a file inside it',
  EACCES: 'permission denied, this user cannot read it; check its permissions (chmod +r)',
  EPERM: 'permission denied, this user cannot read it; check its permissions (chmod +r)',
  ENOTDIR: 'a part of the path is not a directory; check the path',
  ENAMETOOLONG: 'a name in the path is longer than the file system allows (255 bytes for one name); check the path',
};

/** A file system error on a source file, as a contract error naming the file (E_BAD_INPUT: the path is the problem). */
export function sourceFileError(path: string, err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as NodeJS.ErrnoException;
  const problem = e.code ? PROBLEMS[e.code] : undefined;
  if (!problem) return new ApiError('E_DATA', `cannot read ${path}: ${e.message}`);
  return new ApiError('E_BAD_INPUT', `cannot read ${path}: ${e.code}: ${problem}`);
}

/**
 * Size of a source file, after checking that it is a regular file this process
 * can open for reading, so a directory or a locked file is refused up front
 * rather than by a stream halfway through an import.
 */
export async function sourceFileSize(path: string): Promise<number> {
  try {
    // The opened file is the one checked: fstat, not a stat of the path before it.
    const fh = await fs.open(path, SOURCE_OPEN_FLAGS);
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
