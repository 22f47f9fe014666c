import { z } from 'zod';

import { BIDI_MARK, quotedText } from './shell-word';

/**
 * Data files added to the workspace's sources/ folder from the Datasets page (issue 41 item 1), so a
 * person needs no shell to import. Serve mode: the page PUTs each file's bytes to
 * SOURCE_UPLOAD_PATH + '/<percent-encoded name>' with the serve token in DOWNLOAD_TOKEN_HEADER (a header a
 * cross-site form cannot send), streamed into a temp file that becomes the file only when whole.
 * The desktop app: the main process opens its own file dialog and copies the chosen files the same
 * way (SOURCE_SHELL_METHODS, answered by the Electron shell itself, not the services' router).
 */
export const SOURCE_UPLOAD_PATH = '/upload/sources';

/** The workspace folder uploads go to, and the wizard's file chooser opens. */
export const SOURCES_FOLDER = 'sources';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** The largest file an upload or a copy takes, unless the server is told otherwise. */
export const DEFAULT_SOURCE_UPLOAD_MAX_BYTES = 4 * GiB;

/** Bytes as a person reads a limit and a file size: "4 GiB", "12.5 MiB", "900 bytes". */
export function bytesInWords(bytes: number): string {
  const unit = bytes >= GiB ? { size: GiB, name: 'GiB' } : bytes >= MiB ? { size: MiB, name: 'MiB' } : bytes >= 1024 ? { size: 1024, name: 'KiB' } : null;
  if (!unit) return `${bytes} byte${bytes === 1 ? '' : 's'}`;
  const value = bytes / unit.size;
  // 16.02 MiB reads "16 MiB", not "16.0 MiB".
  return `${value.toFixed(1).replace(/\.0$/, '')} ${unit.name}`;
}

/** Longest name most file systems take, in UTF-8 bytes. */
const MAX_NAME_BYTES = 255;
/** Names Windows keeps for devices, with any extension: a workspace copied there must still open. */
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$/i;
/** Characters Windows refuses in a name (the rest of the rules keep out separators and control characters). */
const WINDOWS_RESERVED = /[<>:"|?*]/;

const codePoint = (c: string) => `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * Why `name` cannot be a file of sources/, naming the value, or null when it can: one plain name (no
 * separator, not '.' or '..'), visible (no leading dot: temp files start with one), no control
 * characters, line separators or bidi marks, and one Windows also takes (the workspace is shared between machines).
 */
export function sourceFileNameProblem(name: string): string | null {
  // Quoted, and escaped past what JSON escapes (C1 controls, separators, bidi marks): the refusal is shown too.
  const shown = quotedText(name, 80);
  if (name === '') return 'the file has no name';
  if (name.includes('/') || name.includes('\\')) return `file name ${shown} holds a path separator: only a plain file name goes into sources/`;
  if (name === '.' || name === '..') return `file name ${shown} is not a file name`;
  // eslint-disable-next-line no-control-regex
  const control = /[\u0000-\u001f\u007f-\u009f]/.exec(name);
  if (control) return `file name ${shown} holds a control character (code ${control[0].charCodeAt(0)}): rename the file`;
  // A name is shown in lists and messages: a separator would break its line, a bidi mark reorder it (evil\u202Evsc.exe).
  const separator = /[\u2028\u2029]/.exec(name);
  if (separator) return `file name ${shown} holds a line or paragraph separator (${codePoint(separator[0])}): rename the file`;
  const bidi = BIDI_MARK.exec(name);
  if (bidi) return `file name ${shown} holds a bidirectional formatting mark (${codePoint(bidi[0])}), which reorders what is shown: rename the file`;
  if (name.startsWith('.')) return `file name ${shown} starts with a dot (a hidden file): rename the file`;
  const reserved = WINDOWS_RESERVED.exec(name);
  if (reserved) return `file name ${shown} holds '${reserved[0]}', which Windows does not allow in a name: rename the file`;
  if (/[ .]$/.test(name)) return `file name ${shown} ends with a space or a dot, which Windows drops: rename the file`;
  if (WINDOWS_DEVICE.test(name)) return `file name ${shown} is a device name on Windows: rename the file`;
  if (new TextEncoder().encode(name).length > MAX_NAME_BYTES) return `file name ${shown} is longer than the ${MAX_NAME_BYTES} bytes a file system takes: rename the file`;
  return null;
}

/** One file added to sources/: its name, its path as the wizard and files.list name it, its size. */
export const SourceFileAddedSchema = z
  .object({
    name: z.string(),
    /** Relative to the workspace: "sources/iris.csv". */
    path: z.string(),
    bytes: z.number().int().nonnegative(),
  })
  .strict();
export type SourceFileAdded = z.infer<typeof SourceFileAddedSchema>;

/** How far a transfer is: the file being sent and the bytes of all files sent so far. */
export const SourceUploadProgressSchema = z
  .object({
    uploadId: z.string(),
    file: z.string(),
    /** 1-based. */
    fileIndex: z.number().int().min(1),
    files: z.number().int().min(1),
    sentBytes: z.number().nonnegative(),
    totalBytes: z.number().nonnegative(),
  })
  .strict();
export type SourceUploadProgress = z.infer<typeof SourceUploadProgressSchema>;

const UploadIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'an upload id is letters, digits, _ and -');

/**
 * What the desktop shell answers itself over the call channel (they need its dialog): the files chosen
 * there copied into sources/, with SOURCE_PROGRESS_EVENT events for the upload id; and a cancel by that id.
 */
export const SOURCE_SHELL_METHODS = {
  'sources.addChosenFiles': {
    params: z.object({ uploadId: UploadIdSchema }).strict(),
    /** Nothing chosen (the dialog closed) is an empty list. */
    result: z.object({ added: z.array(SourceFileAddedSchema) }).strict(),
  },
  'sources.cancelAdd': { params: z.object({ uploadId: UploadIdSchema }).strict(), result: z.object({ cancelled: z.boolean() }).strict() },
} as const;
export type SourceShellMethod = keyof typeof SOURCE_SHELL_METHODS;

export function isSourceShellMethod(name: string): name is SourceShellMethod {
  return Object.prototype.hasOwnProperty.call(SOURCE_SHELL_METHODS, name);
}

/** The event the desktop shell sends a copy's progress as (serve mode's page counts its own bytes). */
export const SOURCE_PROGRESS_EVENT = 'sources.progress';
