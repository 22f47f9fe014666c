import { promises as fs } from 'node:fs';
import path from 'node:path';

import { z } from 'zod';

import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import type { ReportDetail, ReportFigure, ReportSection, ReportSummary } from '../../api/reports';
import { FigureNameSchema, ReportFigureSchema, ReportSectionSchema } from '../../api/reports';
import { writeFileAtomic, writeJsonAtomic } from '../atomic-write';
import type { Workspace } from '../workspace';

export const REPORT_SCHEMA_VERSION = 1;
const META_FILE = 'report.json';
const MAX_SLUG = 48;
const FOLDER_PATTERN = /^(\d{4})-[a-z0-9-]+$/;

/** reports/<id>/report.json: what the report was generated from, so it can be regenerated. */
export const ReportMetaSchema = z.object({
  schemaVersion: z.number().int().min(1).max(REPORT_SCHEMA_VERSION),
  id: z.string(),
  number: z.number().int().min(1),
  title: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  runIds: z.array(z.string()),
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

async function readMeta(dir: string): Promise<ReportMeta> {
  const file = path.join(dir, META_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (err) {
    throw new ApiError('E_DATA', `cannot read ${file}: ${(err as Error).message}`);
  }
  const parsed = ReportMetaSchema.safeParse(raw);
  if (!parsed.success) throw new ApiError('E_DATA', `${file} does not match its schema: ${formatIssues(parsed.error, 'report')}`);
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
  if (!(await fs.stat(dir).catch(() => null))?.isDirectory()) {
    throw new ApiError('E_BAD_INPUT', `there is no report ${id} in ${workspace.resolve('reports')} (reports.list names them)`);
  }
  return dir;
}

/** Every report, newest number first; one whose files cannot be read is listed with the problem. */
export async function listReports(workspace: Workspace): Promise<ReportSummary[]> {
  const names = await fs.readdir(workspace.resolve('reports')).catch(() => [] as string[]);
  const out: ReportSummary[] = [];
  for (const name of names.filter((n) => FOLDER_PATTERN.test(n)).sort().reverse()) {
    try {
      out.push(summaryOf(await readMeta(reportDir(workspace, name))));
    } catch (err) {
      const number = Number(FOLDER_PATTERN.exec(name)?.[1] ?? 1) || 1;
      out.push({ id: name, number, title: name, createdAt: '', updatedAt: '', runIds: [], path: path.posix.join('reports', name), problem: (err as Error).message });
    }
  }
  return out;
}

export async function readReport(workspace: Workspace, id: string): Promise<ReportDetail> {
  const dir = await existingDir(workspace, id);
  const meta = await readMeta(dir);
  const file = path.join(dir, markdownFileOf(id));
  const markdown = await fs.readFile(file, 'utf8').catch((err: Error) => {
    throw new ApiError('E_DATA', `cannot read the report's markdown ${file}: ${err.message}`);
  });
  return { summary: summaryOf(meta), markdown, figures: meta.figures, sections: meta.sections, notes: meta.notes };
}

export async function readReportMeta(workspace: Workspace, id: string): Promise<ReportMeta> {
  return readMeta(await existingDir(workspace, id));
}

/** One figure's SVG text, by its file name. */
export async function readFigure(workspace: Workspace, id: string, name: string): Promise<{ name: string; svg: string }> {
  const checked = FigureNameSchema.safeParse(name);
  if (!checked.success) throw new ApiError('E_BAD_INPUT', `${JSON.stringify(name)} is not a figure name: ${formatIssues(checked.error, 'name')}`);
  const dir = await existingDir(workspace, id);
  const meta = await readMeta(dir);
  if (!meta.figures.some((f) => f.name === name)) {
    throw new ApiError('E_BAD_INPUT', `report ${id} has no figure ${name} (it has ${meta.figures.map((f) => f.name).join(', ') || 'none'})`);
  }
  const svg = await fs.readFile(path.join(dir, name), 'utf8').catch((err: Error) => {
    throw new ApiError('E_DATA', `figure ${name} of report ${id} cannot be read: ${err.message}`);
  });
  return { name, svg };
}

/** The next free number: one more than the largest folder's. */
/** A number being taken by a report under creation (see createReport). */
const CLAIM_PATTERN = /^\.claim-(\d{4,})$/;

async function nextNumber(workspace: Workspace): Promise<number> {
  const names = await fs.readdir(workspace.resolve('reports')).catch(() => [] as string[]);
  return names.reduce((max, n) => Math.max(max, Number(FOLDER_PATTERN.exec(n)?.[1] ?? CLAIM_PATTERN.exec(n)?.[1] ?? 0)), 0) + 1;
}

async function numberTaken(workspace: Workspace, number: number): Promise<boolean> {
  const names = await fs.readdir(workspace.resolve('reports')).catch(() => [] as string[]);
  return names.some((n) => Number(FOLDER_PATTERN.exec(n)?.[1] ?? 0) === number);
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
  await fs.mkdir(workspace.resolve('reports'), { recursive: true });
  for (let attempt = 0; ; attempt++) {
    // Rescanned on every attempt: a number another creator took shows up as its claim or its folder.
    const number = await nextNumber(workspace);
    const claim = workspace.resolve(path.join('reports', `.claim-${String(number).padStart(4, '0')}`));
    try {
      await fs.mkdir(claim); // exclusive: the number is ours, whatever the title
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && attempt < 100) continue;
      throw err;
    }
    // Our scan may predate another creator who claimed this number, made its folder and let the
    // claim go before our mkdir: its folder is there now (made before its claim went), so look.
    if (await numberTaken(workspace, number)) {
      await fs.rmdir(claim).catch(() => undefined);
      if (attempt < 100) continue;
      throw new ApiError('E_INTERNAL', `no free report number after ${attempt + 1} attempts: reports are being created faster than they can be numbered`);
    }
    content = { ...content, markdown: content.markdown.replace(/^# \d+\. /, `# ${number}. `) };
    const id = `${String(number).padStart(4, '0')}-${slugOf(content.title)}`;
    const dir = reportDir(workspace, id);
    try {
      await fs.mkdir(dir);
    } finally {
      // The folder now carries the number (or creating it failed): the claim has done its job.
      await fs.rmdir(claim).catch(() => undefined);
    }
    const at = now.toISOString();
    const meta: ReportMeta = { schemaVersion: REPORT_SCHEMA_VERSION, id, number, title: content.title, createdAt: at, updatedAt: at, runIds: content.runIds, sections: content.sections, figures: [], notes: [], blocks: {} };
    return writeContent(dir, meta, content, now);
  }
}

/** Replaces a report's markdown and figures (regenerate); figures no longer drawn are removed. */
export async function rewriteReport(workspace: Workspace, id: string, content: ReportContent, now = new Date()): Promise<ReportDetail> {
  const dir = await existingDir(workspace, id);
  const meta = await readMeta(dir);
  const drawn = new Set(content.figures.map((f) => f.figure.name));
  for (const old of meta.figures) if (!drawn.has(old.name)) await fs.rm(path.join(dir, old.name), { force: true });
  return writeContent(dir, meta, content, now);
}

async function writeContent(dir: string, meta: ReportMeta, content: ReportContent, now: Date): Promise<ReportDetail> {
  for (const f of content.figures) await writeFileAtomic(path.join(dir, f.figure.name), f.svg);
  await writeFileAtomic(path.join(dir, markdownFileOf(meta.id)), content.markdown);
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
  await writeJsonAtomic(path.join(dir, META_FILE), next);
  return { summary: summaryOf(next), markdown: content.markdown, figures: next.figures, sections: next.sections, notes: next.notes };
}

/** Stores the person's edited markdown as is. */
export async function saveMarkdown(workspace: Workspace, id: string, markdown: string, now = new Date()): Promise<ReportDetail> {
  const dir = await existingDir(workspace, id);
  const meta = await readMeta(dir);
  await writeFileAtomic(path.join(dir, markdownFileOf(id)), markdown);
  const next = { ...meta, updatedAt: now.toISOString() };
  await writeJsonAtomic(path.join(dir, META_FILE), next);
  return { summary: summaryOf(next), markdown, figures: next.figures, sections: next.sections, notes: next.notes };
}

export async function removeReport(workspace: Workspace, id: string): Promise<{ removed: string }> {
  const dir = await existingDir(workspace, id);
  // Renamed out of the list first, so a reader never sees a half-deleted report.
  const trash = path.join(path.dirname(dir), `.removing-${id}-${process.pid}-${Date.now()}`);
  await fs.rename(dir, trash);
  await fs.rm(trash, { recursive: true, force: true });
  return { removed: id };
}
