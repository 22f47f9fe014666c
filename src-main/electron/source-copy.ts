// The desktop app's way to add data files to sources/ (issue 41 item 1): the person picks files in the
// main process's own dialog, and each is streamed into the workspace through the same function serve
// mode's upload uses (same names refused, same limit, no partial file). Free of `electron`, so it is
// tested in plain Node; main.ts gives it the dialog and the window to report to.
import { constants, createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { addAbortSignal } from 'node:stream';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import {
  DEFAULT_SOURCE_UPLOAD_MAX_BYTES,
  SOURCE_PROGRESS_EVENT,
  SOURCE_SHELL_METHODS,
  type SourceFileAdded,
  type SourceShellMethod,
  type SourceUploadProgress,
} from '../api/source-uploads';
import { addSourceFile, checkSourceFileName, tooLargeRefusal } from '../core/workspace/source-files';
import type { Workspace } from '../core/workspace/workspace';

/** Progress is sent at most this often: a file of gigabytes is thousands of chunks. */
const PROGRESS_EVERY_MS = 100;

export interface CopyChosenOptions {
  maxBytes?: number;
  signal?: AbortSignal;
  onProgress?: (progress: Omit<SourceUploadProgress, 'uploadId'>) => void;
}

interface Chosen {
  file: string;
  name: string;
  size: number;
}

/** Each chosen file as a regular file with a name sources/ takes and a size under the limit, before any is copied. */
async function checkChosen(files: readonly string[], maxBytes: number): Promise<Chosen[]> {
  const out: Chosen[] = [];
  for (const file of files) {
    const name = checkSourceFileName(path.basename(file));
    // The person's own choice: a link they picked is followed; a FIFO or device would never end.
    const st = await fs.stat(file).catch((err: NodeJS.ErrnoException) => {
      throw new ApiError('E_BAD_INPUT', `${name} cannot be read (${err.code ?? err.message})`);
    });
    if (!st.isFile()) throw new ApiError('E_BAD_INPUT', `${name} is not a regular file: choose data files`);
    if (st.size > maxBytes) throw tooLargeRefusal(name, st.size, maxBytes, 'is');
    if (out.some((c) => c.name === name)) throw new ApiError('E_BAD_INPUT', `two chosen files are named ${name}: sources/ holds one file per name`);
    out.push({ file, name, size: st.size });
  }
  return out;
}

/**
 * Copies files the person chose (anywhere on their machine) into sources/, one after another, streamed
 * with the same limit as an upload; an abort removes the file being copied (the ones before it stay).
 */
export async function copyChosenFiles(workspace: Workspace, files: readonly string[], options: CopyChosenOptions = {}): Promise<SourceFileAdded[]> {
  const maxBytes = options.maxBytes ?? DEFAULT_SOURCE_UPLOAD_MAX_BYTES;
  const chosen = await checkChosen(files, maxBytes);
  const totalBytes = chosen.reduce((sum, c) => sum + c.size, 0);
  const added: SourceFileAdded[] = [];
  let before = 0;
  let lastSent = 0;
  for (const [i, c] of chosen.entries()) {
    let started = false;
    const report = (written: number, force = false) => {
      const now = Date.now();
      // The first bytes of each file are said at once: the bar moves as soon as the copy does.
      const first = written > 0 && !started;
      started ||= written > 0;
      if (!force && !first && now - lastSent < PROGRESS_EVERY_MS) return;
      lastSent = now;
      options.onProgress?.({ file: c.name, fileIndex: i + 1, files: chosen.length, sentBytes: before + written, totalBytes });
    };
    report(0, true);
    const handle = await fs.open(c.file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0)).catch((err: NodeJS.ErrnoException) => {
      throw new ApiError('E_BAD_INPUT', `${c.name} cannot be read (${err.code ?? err.message})`);
    });
    // Opened as checked: a file swapped for a FIFO since is refused rather than waited on.
    if (!(await handle.stat()).isFile()) {
      await handle.close();
      throw new ApiError('E_BAD_INPUT', `${c.name} is not a regular file: choose data files`);
    }
    const stream = createReadStream('', { fd: handle, autoClose: true, highWaterMark: 1024 * 1024 });
    if (options.signal) addAbortSignal(options.signal, stream);
    try {
      const done = await addSourceFile(workspace, c.name, stream, { maxBytes, declaredBytes: c.size, signal: options.signal, onBytes: (n) => report(n) });
      added.push(done);
      before += done.bytes;
      report(0, true);
    } catch (err) {
      if (options.signal?.aborted && added.length) {
        throw new ApiError('E_CANCELLED', `cancelled: ${c.name} was not added; ${added.map((a) => a.name).join(', ')} ${added.length === 1 ? 'was' : 'were'}`);
      }
      throw err;
    } finally {
      stream.destroy();
    }
  }
  return added;
}

/** The window that asked: its dialog and its events. */
export interface AskingWindow {
  /** The main process's open-file dialog: the chosen paths, none when it was closed. */
  chooseFiles(): Promise<string[]>;
  send(event: string, data: unknown): void;
}

/**
 * The desktop shell's own methods over the call channel (SOURCE_SHELL_METHODS): params checked as the
 * router checks the contract's; one copy per upload id, cancelled by it.
 */
export function sourceShell(options: { workspace: Workspace; maxBytes?: number }) {
  const running = new Map<string, AbortController>();
  return async (method: SourceShellMethod, params: unknown, window: AskingWindow): Promise<unknown> => {
    const parsed = SOURCE_SHELL_METHODS[method].params.safeParse(params ?? {});
    if (!parsed.success) throw new ApiError('E_BAD_REQUEST', `bad request to ${method}: ${formatIssues(parsed.error, 'params')}`);
    const { uploadId } = parsed.data;
    if (method === 'sources.cancelAdd') {
      const copy = running.get(uploadId);
      copy?.abort();
      return { cancelled: copy !== undefined };
    }
    if (running.has(uploadId)) throw new ApiError('E_BAD_INPUT', `upload ${uploadId} is running already`);
    const controller = new AbortController();
    running.set(uploadId, controller);
    try {
      const files = await window.chooseFiles();
      if (controller.signal.aborted || files.length === 0) return { added: [] };
      const added = await copyChosenFiles(options.workspace, files, {
        maxBytes: options.maxBytes,
        signal: controller.signal,
        onProgress: (p) => window.send(SOURCE_PROGRESS_EVENT, { uploadId, ...p }),
      });
      return { added };
    } finally {
      running.delete(uploadId);
    }
  };
}
