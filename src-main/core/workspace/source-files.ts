// Data files added to sources/ without a shell (issue 41 item 1): serve mode's upload route and the
// desktop app's file dialog both stream into one function, so both refuse the same names and sizes
// and neither leaves a partial file.
import { ApiError } from '../../api/errors';
import { bytesInWords, SOURCES_FOLDER, sourceFileNameProblem, type SourceFileAdded } from '../../api/source-uploads';
import type { Workspace } from './workspace';
import { writeNewFileStreamed } from './workspace-files';

/** Why an upload or copy was refused; `status` is the HTTP answer serve mode gives it. */
export class SourceFileRefused extends ApiError {
  constructor(
    readonly status: 400 | 409 | 413,
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
  const file = `${SOURCES_FOLDER}/${name}`;
  try {
    const bytes = await writeNewFileStreamed(workspace, file, chunks, {
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
