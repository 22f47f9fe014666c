import path from 'node:path';

import { z } from 'zod';

import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import { IdSchema } from '../../api/ids';
import type { ReportDetail, ReportFigure, ReportSection, ReportSummary } from '../../api/reports';
import { FigureNameSchema, ReportFigureSchema, ReportSectionSchema } from '../../api/reports';
import type { Workspace } from '../workspace/workspace';
import { LIST_READS_AT_ONCE, mapAtOnce } from '../common/map-at-once';
import {
  entryProblem,
  isFolder,
  listFolder,
  makeFolder,
  makeFolderExclusive,
  MiB,
  readJsonCapped,
  readTextCapped,
  removeEmptyFolder,
  removeEntry,
  renameEntry,
  writeFileConfined,
  writeJsonConfined,
} from '../workspace/workspace-files';

export const REPORT_SCHEMA_VERSION = 1;
const META_FILE = 'report.json';
const MAX_SLUG = 48;
// Numbered from 0001; past 9999 the number takes more digits (a claim planted at .claim-9999 must not stop new reports).
const FOLDER_PATTERN = /^(\d{4,6})-[a-z0-9-]+$/;
/** report.json holds sections, figure names and notes; the markdown and an SVG are pages, not megabytes. */
const MAX_META_BYTES = 4 * MiB;
/** What the editor can save (MAX_REPORT_MARKDOWN_CHARS, up to 3 bytes each as UTF-8); a generated report is tens of KB. */
const MAX_MARKDOWN_BYTES = 6 * MiB;
/**
 * Control characters no report or SVG chart holds (C0 but tab, line feed and carriage return; DEL; C1): shown as
 * U+FFFD. JSON writes each as 6 bytes: a planted markdown of them made each answer six times the file, and 32
 * of those in flight stalled the server for seconds (re-attack 12).
 */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;
const withoutControls = (text: string) => text.replace(CONTROL, '\ufffd');
/**
 * A figure is an SVG chart of some 20 KB. At 16 MiB, 64 requests for a planted figure of control bytes (6 bytes
 * each as JSON) kept the server busy building gigabytes of answers (re-attack 11); 2 MiB is still 100 times a real one.
 */
const MAX_FIGURE_BYTES = 2 * MiB;

/** reports/<id>/report.json: what the report was generated from, so it can be regenerated. */
export const ReportMetaSchema = z.object({
  schemaVersion: z.number().int().min(1).max(REPORT_SCHEMA_VERSION),
  id: z.string(),
  number: z.number().int().min(1),
  title: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** Ids from the file become paths (runs/<id>) when the report is regenerated: re-validated here. */
  runIds: z.array(IdSchema),
  sections: z.array(ReportSectionSchema),
  figures: z.array(ReportFigureSchema),
  notes: z.array(z.string()),
  /** Each generated block's fingerprint as last generated: regenerate tells the person's edits inside one from its own text. */
  blocks: z.record(z.string(), z.string()).default({}),
});
export type ReportMeta = z.infer<typeof ReportMetaSchema>;

/** "Training benchmark: mlp on fashion-mnist!" -> "training-benchmark-mlp-on-fashion-mnist": whole words, at most 48 characters. */
export function slugOf(title: string): string {
  const full = title
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (full.length <= MAX_SLUG) return full || 'report';
  const cut = full.slice(0, MAX_SLUG + 1);
  const lastBreak = cut.lastIndexOf('-');
  return (lastBreak > 0 ? cut.slice(0, lastBreak) : full.slice(0, MAX_SLUG)).replace(/-+$/, '');
}

export function markdownFileOf(id: string): string {
  return `${id}.md`;
}

/** The report's folder; refuses ids that are not report folder names, so no request can name another folder. */
export function reportDir(workspace: Workspace, id: string): string {
  if (!FOLDER_PATTERN.test(id)) throw new ApiError('E_BAD_INPUT', `${JSON.stringify(id)} is not a report id (NNNN-title, e.g. 0001-mlp-benchmark)`);
  return workspace.resolve(path.join('reports', id));
}

async function readMeta(workspace: Workspace, id: string): Promise<ReportMeta> {
  const file = path.join('reports', id, META_FILE);
  let raw: unknown;
  try {
    raw = await readJsonCapped(workspace, file, MAX_META_BYTES);
  } catch (err) {
    throw new ApiError('E_DATA', `cannot read ${file}: ${(err as Error).message}`);
  }
  const parsed = ReportMetaSchema.safeParse(raw);
  if (!parsed.success) throw new ApiError('E_DATA', `${file} does not match its schema: ${formatIssues(parsed.error, 'report')}`);
  // The id names the folder and the markdown file: one from the file must be this folder's.
  if (parsed.data.id !== id) throw new ApiError('E_DATA', `${file} says it is report ${JSON.stringify(parsed.data.id.slice(0, 80))}, not ${id}`);
  return parsed.data;
}

function summaryOf(meta: ReportMeta): ReportSummary {
  return {
    id: meta.id,
    number: meta.number,
    title: meta.title,
    createdAt: meta.createdAt,
    updatedAt: meta.updatedAt,
    runIds: meta.runIds,
    path: path.posix.join('reports', meta.id, markdownFileOf(meta.id)),
    problem: null,
  };
}

async function existingDir(workspace: Workspace, id: string): Promise<string> {
  const dir = reportDir(workspace, id);
  if (!(await isFolder(workspace, dir))) {
    throw new ApiError('E_BAD_INPUT', `there is no report ${id} in ${workspace.resolve('reports')} (reports.list names them)`);
  }
  return dir;
}

/** Every report, newest number first; one whose files cannot be read (or a link in its place) is listed with the problem. */
export async function listReports(workspace: Workspace): Promise<ReportSummary[]> {
  const entries = await listFolder(workspace, 'reports').catch(() => []);
  return mapAtOnce(entries.filter((e) => FOLDER_PATTERN.test(e.name)).reverse(), () => LIST_READS_AT_ONCE, async (entry): Promise<ReportSummary> => {
    const name = entry.name;
    try {
      const notFolder = entryProblem(entry, 'dir');
      if (notFolder) throw new ApiError('E_DATA', notFolder);
      return summaryOf(await readMeta(workspace, name));
    } catch (err) {
      const number = Number(FOLDER_PATTERN.exec(name)?.[1] ?? 1) || 1;
      return { id: name, number, title: name, createdAt: '', updatedAt: '', runIds: [], path: path.posix.join('reports', name), problem: (err as Error).message };
    }
  });
}

export async function readReport(workspace: Workspace, id: string): Promise<ReportDetail> {
  await existingDir(workspace, id);
  const meta = await readMeta(workspace, id);
  const file = path.join('reports', id, markdownFileOf(id));
  const markdown = await readTextCapped(workspace, file, MAX_MARKDOWN_BYTES).catch((err: Error) => {
    throw new ApiError('E_DATA', `cannot read the report's markdown: ${err.message}`);
  });
  return { summary: summaryOf(meta), markdown: withoutControls(markdown), figures: meta.figures, sections: meta.sections, notes: meta.notes };
}

export async function readReportMeta(workspace: Workspace, id: string): Promise<ReportMeta> {
  await existingDir(workspace, id);
  return readMeta(workspace, id);
}

/** One figure's SVG text, by its file name. */
export async function readFigure(workspace: Workspace, id: string, name: string): Promise<{ name: string; svg: string }> {
  const checked = FigureNameSchema.safeParse(name);
  if (!checked.success) throw new ApiError('E_BAD_INPUT', `${JSON.stringify(name)} is not a figure name: ${formatIssues(checked.error, 'name')}`);
  await existingDir(workspace, id);
  const meta = await readMeta(workspace, id);
  if (!meta.figures.some((f) => f.name === name)) {
    throw new ApiError('E_BAD_INPUT', `report ${id} has no figure ${name} (it has ${meta.figures.map((f) => f.name).join(', ') || 'none'})`);
  }
  const svg = await readTextCapped(workspace, path.join('reports', id, name), MAX_FIGURE_BYTES).catch((err: Error) => {
    throw new ApiError('E_DATA', `figure ${name} of report ${id} cannot be read: ${err.message}`);
  });
  return { name, svg: withoutControls(svg) };
}

async function reportNames(workspace: Workspace): Promise<string[]> {
  return (await listFolder(workspace, 'reports').catch(() => [])).map((e) => e.name);
}

/** One more than the largest report's number. Claims are not counted: a creator skips a claimed number (see createReport). */
async function nextNumber(workspace: Workspace): Promise<number> {
  const names = await reportNames(workspace);
  return names.reduce((max, n) => Math.max(max, Number(FOLDER_PATTERN.exec(n)?.[1] ?? 0)), 0) + 1;
}

async function numberTaken(workspace: Workspace, number: number): Promise<boolean> {
  return (await reportNames(workspace)).some((n) => Number(FOLDER_PATTERN.exec(n)?.[1] ?? 0) === number);
}

export interface ReportContent {
  title: string;
  runIds: string[];
  sections: ReportSection[];
  markdown: string;
  figures: { figure: ReportFigure; svg: string }[];
  notes: string[];
  /** Each block's fingerprint as generated, so regenerate can tell the person's edits inside one. */
  blocks: Record<string, string>;
}

/** The next free report number, for the title line of a report about to be created. */
export const nextReportNumber = nextNumber;

/**
 * Writes a new report folder. Within one process the ReportService runs creations one at
 * a time; across processes (the CLI beside the app) the number is claimed first with an
 * exclusive mkdir of reports/.claim-NNNN, so two creators never share a number whatever
 * their titles: the loser rescans and takes the next (its "# N. Title" line is renumbered).
 */
export async function createReport(workspace: Workspace, content: ReportContent, now = new Date()): Promise<ReportDetail> {
  await makeFolder(workspace, 'reports');
  let floor = 1; // past a number found claimed by another creator (or by a claim left behind)
  for (let attempt = 0; ; attempt++) {
    // Rescanned on every attempt: a number another creator took shows up as its folder.
    const number = Math.max(await nextNumber(workspace), floor);
    const claim = path.join('reports', `.claim-${String(number).padStart(4, '0')}`);
    try {
      await makeFolderExclusive(workspace, claim); // exclusive: the number is ours, whatever the title
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && attempt < 100) {
        floor = number + 1;
        continue;
      }
      throw err;
    }
    // Our scan may predate another creator who claimed this number, made its folder and let the
    // claim go before our mkdir: its folder is there now (made before its claim went), so look.
    if (await numberTaken(workspace, number)) {
      await removeEmptyFolder(workspace, claim);
      if (attempt < 100) continue;
      throw new ApiError('E_INTERNAL', `no free report number after ${attempt + 1} attempts: reports are being created faster than they can be numbered`);
    }
    content = { ...content, markdown: content.markdown.replace(/^# \d+\. /, `# ${number}. `) };
    const id = `${String(number).padStart(4, '0')}-${slugOf(content.title)}`;
    try {
      reportDir(workspace, id);
      await makeFolderExclusive(workspace, path.join('reports', id));
    } finally {
      // The folder now carries the number (or creating it failed): the claim has done its job.
      await removeEmptyFolder(workspace, claim);
    }
    const at = now.toISOString();
    const meta: ReportMeta = { schemaVersion: REPORT_SCHEMA_VERSION, id, number, title: content.title, createdAt: at, updatedAt: at, runIds: content.runIds, sections: content.sections, figures: [], notes: [], blocks: {} };
    try {
      return await writeContent(workspace, meta, content, now);
    } catch (err) {
      // A report half written is no report: its folder goes, rather than show in the list as damaged.
      await removeEntry(workspace, path.join('reports', id)).catch(() => undefined);
      throw err;
    }
  }
}

/** Replaces a report's markdown and figures (regenerate); figures no longer drawn are removed. */
export async function rewriteReport(workspace: Workspace, id: string, content: ReportContent, now = new Date()): Promise<ReportDetail> {
  await existingDir(workspace, id);
  const meta = await readMeta(workspace, id);
  const drawn = new Set(content.figures.map((f) => f.figure.name));
  for (const old of meta.figures) if (!drawn.has(old.name)) await removeEntry(workspace, path.join('reports', id, old.name));
  return writeContent(workspace, meta, content, now);
}

async function writeContent(workspace: Workspace, meta: ReportMeta, content: ReportContent, now: Date): Promise<ReportDetail> {
  const dir = path.join('reports', meta.id);
  for (const f of content.figures) await writeFileConfined(workspace, path.join(dir, f.figure.name), f.svg);
  await writeFileConfined(workspace, path.join(dir, markdownFileOf(meta.id)), content.markdown);
  const next: ReportMeta = {
    ...meta,
    title: content.title,
    runIds: content.runIds,
    sections: content.sections,
    figures: content.figures.map((f) => f.figure),
    notes: content.notes,
    blocks: content.blocks,
    updatedAt: now.toISOString(),
  };
  await writeJsonConfined(workspace, path.join(dir, META_FILE), next);
  return { summary: summaryOf(next), markdown: content.markdown, figures: next.figures, sections: next.sections, notes: next.notes };
}

/** Stores the person's edited markdown as is. */
export async function saveMarkdown(workspace: Workspace, id: string, markdown: string, now = new Date()): Promise<ReportDetail> {
  await existingDir(workspace, id);
  const meta = await readMeta(workspace, id);
  const dir = path.join('reports', id);
  await writeFileConfined(workspace, path.join(dir, markdownFileOf(id)), markdown);
  const next = { ...meta, updatedAt: now.toISOString() };
  await writeJsonConfined(workspace, path.join(dir, META_FILE), next);
  return { summary: summaryOf(next), markdown, figures: next.figures, sections: next.sections, notes: next.notes };
}

export async function removeReport(workspace: Workspace, id: string): Promise<{ removed: string }> {
  await existingDir(workspace, id);
  // Renamed out of the list first, so a reader never sees a half-deleted report.
  const trash = path.join('reports', `.removing-${id}-${process.pid}-${Date.now()}`);
  await renameEntry(workspace, path.join('reports', id), trash);
  await removeEntry(workspace, trash);
  return { removed: id };
}
