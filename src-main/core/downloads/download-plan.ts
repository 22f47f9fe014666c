// What goes into a download: a report's markdown and figures, or a run's folder. Planned from
// the folder's listing (links are listed as links, never followed) before a byte is sent, so a
// refusal (an oversize file, too many files) is an error naming the file, not a broken zip.
import path from 'node:path';

import { ApiError } from '../../api/errors';
import type { DownloadKind, DownloadSkipped } from '../../api/downloads';
import { ID_PATTERN } from '../../api/ids';
import { printable } from '../../api/shell-word';
import { markdownFileOf, readReportMeta, reportDir } from '../reports/report-store';
import type { Workspace } from '../workspace/workspace';
import { isZipEntryName } from './zip-writer';
import { entryProblem, folderProblem, isMissing, LIST_KEEP, listFolder, listFolderBounded, MiB, type FolderEntry } from '../workspace/workspace-files';
import { quotedText } from '../../api/shell-word';

export interface DownloadLimits {
  /** Largest file a download includes. */
  maxFileBytes: number;
  /** Largest sum of the files' sizes. */
  maxTotalBytes: number;
  /** Most files. */
  maxFiles: number;
  /** Deepest sub-folder of a run's folder that is followed. */
  maxDepth: number;
  /** Entries of one folder that are listed: past them the folder is refused, never cut in silence. */
  maxEntries: number;
}

/** Under the 4 GiB a zip without ZIP64 holds, and far above a run's logs, telemetry and checkpoints. */
export const DEFAULT_DOWNLOAD_LIMITS: DownloadLimits = { maxFileBytes: 512 * MiB, maxTotalBytes: 2048 * MiB, maxFiles: 10_000, maxDepth: 8, maxEntries: LIST_KEEP };

/** A download refused before it started: the status says which kind of refusal. */
export class DownloadRefused extends ApiError {
  constructor(
    readonly status: 400 | 404 | 413 | 422,
    message: string,
  ) {
    super(status === 413 || status === 422 ? 'E_DATA' : 'E_BAD_INPUT', message);
  }
}

export interface PlannedFile {
  /** Relative to the workspace. */
  file: string;
  /** Inside the zip: the folder's name, then the path within it. */
  entry: string;
  bytes: number;
}

export interface DownloadPlan {
  kind: DownloadKind;
  id: string;
  /** The zip's file name, as the browser saves it. */
  fileName: string;
  files: PlannedFile[];
  totalBytes: number;
  /** Entries left out, each with why (a link, a FIFO); at most MAX_SKIPPED_LISTED named, then one line for the rest. */
  skipped: DownloadSkipped[];
  /** Entries left out past the named ones. */
  unlisted: number;
}

const size = (b: number) => (b >= MiB ? `${(b / MiB).toFixed(1)} MiB` : `${b} bytes`);

/** Characters a file name keeps in Content-Disposition and on any file system; the ids are of these already. */
export function safeFileName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return cleaned.slice(0, 120) || 'download.zip';
}

/** Entries named in a plan's skipped list; past this they are counted, so a folder of a million links costs a line. */
export const MAX_SKIPPED_LISTED = 200;

/** Lists an entry left out, or counts it once the list is full. */
function skip(plan: DownloadPlan, left: DownloadSkipped): void {
  // A name from the workspace, only ever shown (the page, SKIPPED.txt, serve's log): control characters escaped.
  if (plan.skipped.length < MAX_SKIPPED_LISTED) plan.skipped.push({ ...left, name: printable(left.name) });
  else plan.unlisted++;
}

/** The list's last line says how many more were left out unnamed. */
function closeSkipped(plan: DownloadPlan): DownloadPlan {
  if (plan.unlisted) plan.skipped.push({ name: '…', reason: `${plan.unlisted} more entr${plan.unlisted === 1 ? 'y' : 'ies'} left out (links, special files or deep folders)` });
  return plan;
}

function what(entry: FolderEntry): string {
  if (entry.kind === 'link') return 'a link (not followed)';
  return entry.kind === 'dir' ? 'a folder, not a file' : 'a special file (FIFO, socket or device)';
}

/** Adds a file to the plan, or refuses the download when it passes a limit. */
function include(plan: DownloadPlan, limits: DownloadLimits, file: string, entry: string, bytes: number): void {
  if (bytes > limits.maxFileBytes) {
    throw new DownloadRefused(413, `${file} is ${size(bytes)}, more than the ${size(limits.maxFileBytes)} a download includes per file: not downloaded (copy it from the workspace instead)`);
  }
  if (plan.files.length >= limits.maxFiles) throw new DownloadRefused(413, `${path.dirname(file)} holds more than ${limits.maxFiles} files, more than a download includes: not downloaded`);
  if (plan.totalBytes + bytes > limits.maxTotalBytes) {
    throw new DownloadRefused(413, `the files come to more than the ${size(limits.maxTotalBytes)} a download includes (passed at ${file}, ${size(bytes)}): not downloaded`);
  }
  plan.files.push({ file, entry, bytes });
  plan.totalBytes += bytes;
}

/**
 * The folder of the run or report asked for: 404 only when there is none; a link, a file in its place or one that
 * cannot be read is said as it is (the lists show such an item as unreadable, so "there is none" would contradict them).
 */
async function requireItemFolder(workspace: Workspace, dir: string, name: string, listedBy: string): Promise<void> {
  const problem = await folderProblem(workspace, dir);
  if (!problem) return;
  if (isMissing(problem)) throw new DownloadRefused(404, `there is no ${name} in the workspace (${listedBy} names them)`);
  throw new DownloadRefused(422, problem.message);
}

/** The report's markdown and the figures its report.json names, under the report's folder name. */
export async function planReport(workspace: Workspace, id: string, limits: DownloadLimits = DEFAULT_DOWNLOAD_LIMITS): Promise<DownloadPlan> {
  try {
    reportDir(workspace, id);
  } catch (err) {
    throw new DownloadRefused(400, (err as Error).message);
  }
  await requireItemFolder(workspace, path.join('reports', id), `report ${id}`, 'reports.list');
  const meta = await readReportMeta(workspace, id);
  const dir = path.join('reports', id);
  const entries = new Map((await listFolder(workspace, dir)).map((e) => [e.name, e]));
  const plan: DownloadPlan = { kind: 'report', id, fileName: safeFileName(`${id}.zip`), files: [], totalBytes: 0, skipped: [], unlisted: 0 };
  const markdown = markdownFileOf(id);
  for (const name of [markdown, ...meta.figures.map((f) => f.name)]) {
    const file = path.posix.join('reports', id, name);
    const entry = entries.get(name);
    const problem = entry ? entryProblem(entry, 'file') : `${name} is missing`;
    if (problem) {
      if (name === markdown) throw new DownloadRefused(400, `${file}: ${problem}; the report cannot be downloaded without its markdown`);
      skip(plan, { name: `${id}/${name}`, reason: entry ? what(entry) : 'missing' });
      continue;
    }
    include(plan, limits, file, `${id}/${name}`, entry!.bytes);
  }
  return closeSkipped(plan);
}

/** Every regular file of runs/<id>/ and its sub-folders; links and special files are listed as skipped. */
export async function planRun(workspace: Workspace, id: string, limits: DownloadLimits = DEFAULT_DOWNLOAD_LIMITS): Promise<DownloadPlan> {
  if (!ID_PATTERN.test(id) || id.length > 128) throw new DownloadRefused(400, `${quotedText(id)} is not a run id (letters, digits, '.', '_' and '-', not starting with '.')`);
  const dir = path.posix.join('runs', id);
  await requireItemFolder(workspace, dir, `run ${id}`, 'runs.list');
  const plan: DownloadPlan = { kind: 'run', id, fileName: safeFileName(`run-${id}.zip`), files: [], totalBytes: 0, skipped: [], unlisted: 0 };
  const walk = async (rel: string, depth: number): Promise<void> => {
    let entries;
    try {
      const listed = await listFolderBounded(workspace, path.posix.join(dir, rel), { keep: limits.maxEntries, scan: 1 });
      if (listed.omitted) throw new DownloadRefused(413, `${path.posix.join(dir, rel)} holds more than ${listed.entries.length} entries, more than a download lists: not downloaded`);
      entries = listed.entries;
    } catch (err) {
      if (err instanceof DownloadRefused) throw err;
      if (!rel) throw err;
      // One folder the server may not read (its mode, a file system error) leaves the rest of the run downloadable.
      skip(plan, { name: `${id}/${rel}/`, reason: `a folder that cannot be read (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})` });
      return;
    }
    for (const entry of entries) {
      const inner = rel ? `${rel}/${entry.name}` : entry.name;
      // A name legal here but not in a zip (a backslash, a control character): every other file still goes.
      if ((entry.kind === 'dir' || entry.kind === 'file') && !isZipEntryName(`${id}/${inner}`)) {
        skip(plan, { name: `${id}/${inner}`, reason: 'a name a zip cannot hold (a backslash or a control character)' });
        continue;
      }
      if (entry.kind === 'dir') {
        if (depth >= limits.maxDepth) skip(plan, { name: `${id}/${inner}/`, reason: `a folder more than ${limits.maxDepth} levels deep` });
        else await walk(inner, depth + 1);
      } else if (entry.kind === 'file') {
        include(plan, limits, path.posix.join(dir, inner), `${id}/${inner}`, entry.bytes);
      } else {
        skip(plan, { name: `${id}/${inner}`, reason: what(entry) });
      }
    }
  };
  await walk('', 0);
  return closeSkipped(plan);
}
