import { DOWNLOAD_TOKEN_HEADER } from '@api/downloads';
import { ApiError } from '@api/errors';
import { formatIssues } from '@api/format-issues';
import {
  bytesInWords,
  DEFAULT_SOURCE_UPLOAD_MAX_BYTES,
  SOURCE_PROGRESS_EVENT,
  SOURCE_SHELL_METHODS,
  SOURCE_UPLOAD_PATH,
  SourceFileAddedSchema,
  sourceFileNameProblem,
  SourceUploadProgressSchema,
  type SourceFileAdded,
  type SourceUploadProgress,
} from '@api/source-uploads';

import type { Transport } from './transport';

/** How far a transfer is, for a progress bar. */
export type UploadProgress = Omit<SourceUploadProgress, 'uploadId'>;

export interface UploadOptions {
  onProgress(progress: UploadProgress): void;
  /** Aborting stops the transfer; the file being sent is not added (the ones before it are). */
  signal: AbortSignal;
}

/**
 * How the page adds data files to the workspace's sources/ folder: in a browser it sends the bytes of the
 * files the person picked or dropped (serve mode); in the desktop app the main process asks in its own
 * dialog and copies them.
 */
export type SourceUploader =
  | { readonly picks: 'page'; readonly maxBytes: number; send(files: readonly File[], options: UploadOptions): Promise<SourceFileAdded[]> }
  | { readonly picks: 'dialog'; readonly maxBytes: number; chooseAndCopy(options: UploadOptions): Promise<SourceFileAdded[]> };

/** Refusals said before a byte is sent, as the server would say them. */
function checkPicked(files: readonly File[], maxBytes: number): void {
  const seen = new Set<string>();
  for (const file of files) {
    const problem = sourceFileNameProblem(file.name);
    if (problem) throw new ApiError('E_BAD_INPUT', problem);
    if (file.size > maxBytes) throw new ApiError('E_BAD_INPUT', `${file.name} is ${bytesInWords(file.size)}, more than the ${bytesInWords(maxBytes)} a file added to sources/ may be: not sent`);
    if (seen.has(file.name)) throw new ApiError('E_BAD_INPUT', `two files are named ${file.name}: sources/ holds one file per name`);
    seen.add(file.name);
  }
}

/** One file PUT with the token in a header; XHR, since fetch cannot report an upload's progress. */
function putFile(file: File, token: string, maxBytes: number, onSent: (bytes: number) => void, signal: AbortSignal): Promise<SourceFileAdded> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    const stop = () => xhr.abort();
    const settle = (fn: () => void) => {
      signal.removeEventListener('abort', stop);
      fn();
    };
    xhr.open('PUT', `${SOURCE_UPLOAD_PATH}/${encodeURIComponent(file.name)}`);
    xhr.setRequestHeader(DOWNLOAD_TOKEN_HEADER, token);
    xhr.upload.onprogress = (e) => onSent(e.loaded);
    xhr.onload = () =>
      settle(() => {
        if (xhr.status !== 201) {
          const code = xhr.status === 401 || xhr.status === 403 ? 'E_FORBIDDEN' : xhr.status >= 500 && xhr.status !== 507 ? 'E_INTERNAL' : 'E_BAD_INPUT';
          reject(new ApiError(code, xhr.responseText.trim() || `${file.name} was refused (HTTP ${xhr.status})`));
          return;
        }
        let parsed;
        try {
          parsed = SourceFileAddedSchema.safeParse(JSON.parse(xhr.responseText));
        } catch {
          parsed = null;
        }
        if (parsed?.success) resolve(parsed.data);
        else reject(new ApiError('E_INTERNAL', `unexpected answer to the upload of ${file.name}${parsed ? `: ${formatIssues(parsed.error, 'result')}` : ''}`));
      });
    xhr.onerror = () =>
      settle(() =>
        // A refusal the server sent while the browser was still sending can arrive as a broken connection too.
        reject(new ApiError('E_DISCONNECTED', `${file.name} was not added: the connection to Trainbench broke off (files of up to ${bytesInWords(maxBytes)} are taken)`)),
      );
    xhr.onabort = () => settle(() => reject(new ApiError('E_CANCELLED', `cancelled: ${file.name} was not added`)));
    if (signal.aborted) return settle(() => reject(new ApiError('E_CANCELLED', `cancelled: ${file.name} was not added`)));
    signal.addEventListener('abort', stop, { once: true });
    xhr.send(file);
  });
}

/** Serve mode: each picked file PUT to the server, one after another, with the page's token. */
export function httpSourceUploader(token: string, maxBytes = DEFAULT_SOURCE_UPLOAD_MAX_BYTES): SourceUploader {
  return {
    picks: 'page',
    maxBytes,
    async send(files, { onProgress, signal }) {
      checkPicked(files, maxBytes);
      const totalBytes = files.reduce((sum, f) => sum + f.size, 0);
      const added: SourceFileAdded[] = [];
      let before = 0;
      for (const [i, file] of files.entries()) {
        const report = (sent: number) => onProgress({ file: file.name, fileIndex: i + 1, files: files.length, sentBytes: before + sent, totalBytes });
        report(0);
        try {
          added.push(await putFile(file, token, maxBytes, report, signal));
        } catch (err) {
          // Say what did arrive: the files before this one are in sources/.
          if (added.length && err instanceof ApiError) throw new ApiError(err.code, `${err.message} (${added.map((a) => a.name).join(', ')} ${added.length === 1 ? 'was' : 'were'} added)`);
          throw err;
        }
        before += file.size;
        report(0);
      }
      return added;
    },
  };
}

const newUploadId = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;

/** The desktop app: the main process's dialog and copy (sources.addChosenFiles), its progress as events, Cancel by the upload's id. */
export function ipcSourceUploader(transport: Pick<Transport, 'call' | 'onEvent'>, maxBytes = DEFAULT_SOURCE_UPLOAD_MAX_BYTES): SourceUploader {
  return {
    picks: 'dialog',
    maxBytes,
    async chooseAndCopy({ onProgress, signal }) {
      const uploadId = newUploadId();
      const off = transport.onEvent((name, data) => {
        if (name !== SOURCE_PROGRESS_EVENT) return;
        const progress = SourceUploadProgressSchema.safeParse(data);
        if (progress.success && progress.data.uploadId === uploadId) onProgress(progress.data);
      });
      const cancel = () => void transport.call('sources.cancelAdd', { uploadId });
      signal.addEventListener('abort', cancel, { once: true });
      try {
        const outcome = await transport.call('sources.addChosenFiles', { uploadId });
        if (!outcome.ok) throw ApiError.fromPayload(outcome.error);
        const parsed = SOURCE_SHELL_METHODS['sources.addChosenFiles'].result.safeParse(outcome.result);
        if (!parsed.success) throw new ApiError('E_INTERNAL', `unexpected answer to sources.addChosenFiles: ${formatIssues(parsed.error, 'result')}`);
        return parsed.data.added;
      } finally {
        off();
        signal.removeEventListener('abort', cancel);
      }
    },
  };
}
