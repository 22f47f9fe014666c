// Data files added to sources/ without a shell (issue 41 item 1): serve mode's upload route and the
// desktop app's file dialog both stream into one function, so both refuse the same names and sizes
// and neither leaves a partial file.
import { ApiError } from '../../api/errors';
import { bytesInWords, SOURCES_FOLDER, sourceFileNameProblem, type SourceFileAdded } from '../../api/source-uploads';
import type { Workspace } from './workspace';
import { listFolderBounded, workspaceFreeBytes, writeNewFileStreamed } from './workspace-files';

/**
 * Files sources/ may hold before another is refused: a token holder adding files without end filled the folder
 * every import and file list reads (re-attack 27 named it; no person imports this many files one by one).
 */
export const MAX_SOURCE_FILES = 10_000;
/** Free space an added file must leave on the workspace's disk: runs, caches and reports still need room to write. */
export const DEFAULT_KEEP_FREE_BYTES = 1024 ** 3;
/** How often a file streaming in looks at the free space again (one whose size was not said is only known as it comes). */
const ROOM_CHECK_BYTES = 16 * 1024 * 1024;

/** Why an upload or copy was refused; `status` is the HTTP answer serve mode gives it. */
export class SourceFileRefused extends ApiError {
  constructor(
    readonly status: 400 | 409 | 413 | 507,
    message: string,
  ) {
    super('E_BAD_INPUT', message);
  }
}

export interface AddSourceFileOptions {
  /** The largest file taken (DEFAULT_SOURCE_UPLOAD_MAX_BYTES unless the shell says otherwise). */
  maxBytes: number;
  /** The size the sender announced (Content-Length, the chosen file's size): refused at once when over maxBytes. */
  declaredBytes?: number;
  /** Stops the transfer; the partial file is removed and the answer is E_CANCELLED. */
  signal?: AbortSignal;
  onBytes?: (written: number) => void;
  /** Free space the file must leave on the workspace's disk (DEFAULT_KEEP_FREE_BYTES unless a test says otherwise). */
  keepFreeBytes?: number;
}

/** The refusal of a file the disk has no room for, naming the sizes. */
function noRoomRefusal(name: string, bytes: number | undefined, free: number, keepFree: number, known: 'is' | 'passed'): SourceFileRefused {
  // A sender that said no size is refused before its first byte only when the disk is short already.
  const size = bytes === undefined ? 'was not started' : known === 'is' ? `is ${bytesInWords(bytes)}` : `passed ${bytesInWords(bytes)}`;
  return new SourceFileRefused(507, `${name} ${size}, and the disk holding the workspace has ${bytesInWords(Math.max(0, free))} free, of which ${bytesInWords(keepFree)} is kept for runs and reports: not saved, free some space first`);
}

/** Refuses a file when sources/ holds MAX_SOURCE_FILES already, or the disk has no room for `bytes` more. */
async function checkRoom(workspace: Workspace, name: string, bytes: number | undefined, keepFree: number): Promise<void> {
  // A sources/ that is not a plain folder is refused by the write itself, with its own words.
  const listing = await listFolderBounded(workspace, SOURCES_FOLDER, { keep: 0, scan: MAX_SOURCE_FILES }).catch(() => null);
  if (listing && listing.omitted >= MAX_SOURCE_FILES) {
    throw new SourceFileRefused(507, `${SOURCES_FOLDER}/ holds ${MAX_SOURCE_FILES.toLocaleString('en-US')} files already, the most it takes: remove some before adding ${name}`);
  }
  const free = await workspaceFreeBytes(workspace);
  if ((bytes ?? 0) > free - keepFree) throw noRoomRefusal(name, bytes, free, keepFree, 'is');
}

/** `chunks`, with the disk's free space looked at again every ROOM_CHECK_BYTES: the stream stops where it leaves too little. */
async function* roomChecked(workspace: Workspace, name: string, chunks: AsyncIterable<Uint8Array>, keepFree: number, declared: number | undefined): AsyncGenerator<Uint8Array> {
  let got = 0;
  let checkedAt = 0;
  for await (const chunk of chunks) {
    got += chunk.byteLength;
    if (got - checkedAt >= ROOM_CHECK_BYTES) {
      // The bytes written so far are on the disk already: what is left must still cover the next stretch (at most
      // what the sender said is still to come).
      const next = declared === undefined ? ROOM_CHECK_BYTES : Math.min(ROOM_CHECK_BYTES, Math.max(0, declared - got));
      const free = await workspaceFreeBytes(workspace);
      if (free - next < keepFree) throw noRoomRefusal(name, got, free, keepFree, 'passed');
      checkedAt = got;
    }
    yield chunk;
  }
}

/** The refusal of a file over the limit, naming its size and the limit. */
export function tooLargeRefusal(name: string, bytes: number, maxBytes: number, known: 'is' | 'passed'): SourceFileRefused {
  const size = known === 'is' ? `is ${bytesInWords(bytes)}` : `passed ${bytesInWords(maxBytes)} (${bytes.toLocaleString('en-US')} bytes received)`;
  return new SourceFileRefused(413, `${name} ${size}, more than the ${bytesInWords(maxBytes)} a file added to ${SOURCES_FOLDER}/ may be: not saved`);
}

/** A name for sources/ as the person gave it, or the refusal naming the bad value. */
export function checkSourceFileName(name: string): string {
  const problem = sourceFileNameProblem(name);
  if (problem) throw new SourceFileRefused(400, problem);
  return name;
}

/**
 * Streams `chunks` into sources/<name>: refused (naming the value) for a bad name, a name taken, a file over
 * the limit, or a sources/ that is a link; the file appears under its name only when whole.
 */
export async function addSourceFile(workspace: Workspace, name: string, chunks: AsyncIterable<Uint8Array>, options: AddSourceFileOptions): Promise<SourceFileAdded> {
  checkSourceFileName(name);
  const { maxBytes, declaredBytes } = options;
  if (declaredBytes !== undefined && declaredBytes > maxBytes) throw tooLargeRefusal(name, declaredBytes, maxBytes, 'is');
  const keepFree = options.keepFreeBytes ?? DEFAULT_KEEP_FREE_BYTES;
  await checkRoom(workspace, name, declaredBytes, keepFree);
  const file = `${SOURCES_FOLDER}/${name}`;
  try {
    const bytes = await writeNewFileStreamed(workspace, file, roomChecked(workspace, name, chunks, keepFree, declaredBytes), {
      maxBytes,
      tooLarge: (received) => tooLargeRefusal(name, received, maxBytes, 'passed'),
      signal: options.signal,
      onBytes: options.onBytes,
    });
    return { name, path: file, bytes };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new SourceFileRefused(409, `${file} exists already: rename the file you add, or remove the one in ${SOURCES_FOLDER}/ first`);
    }
    if (options.signal?.aborted) throw new ApiError('E_CANCELLED', `cancelled: ${name} was not added to ${SOURCES_FOLDER}/`);
    const code = (err as NodeJS.ErrnoException).code;
    // The folder held open was removed or replaced while the bytes came (another program at the workspace):
    // the write stopped where it was, and the person can simply send the file again.
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new SourceFileRefused(409, `${SOURCES_FOLDER}/ was moved or removed while ${name} was written: not saved, send it again`);
    }
    throw err;
  }
}
