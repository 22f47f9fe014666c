import path from 'node:path';

import { ApiError } from '../../api/errors';
import type { ReportDetail, ReportExportResult, ReportGenerateRequest, RunTraceResult } from '../../api/reports';
import type { Workspace } from '../workspace/workspace';
import { copyFileOut, entryKind, makeChosenFolder, makeFolder, removeEmptyFolder, removeEntry } from '../workspace/workspace-files';
import { mergeRegenerated } from './blocks';
import { generateReport } from './report-generator';
import {
  createReport,
  listReports,
  markdownFileOf,
  nextReportNumber,
  readFigure,
  readReport,
  readReportMeta,
  removeReport,
  reportDir,
  rewriteReport,
  saveMarkdown,
} from './report-store';
import { traceRun } from './trace';
import { FairSlots } from '../common/fair-slots';

/**
 * Asks the person for a folder (the desktop shell's dialog); null when they cancel.
 * Absent in serve mode and the CLI, where no one sits at a dialog on the machine.
 */
export type ChooseFolder = (suggestedName: string) => Promise<string | null>;

export interface ReportServiceOptions {
  chooseFolder?: ChooseFolder;
}

/** Workspace folders whose contents the workbench owns: an export never writes into them. */
const MANAGED_FOLDERS = ['reports', 'runs', 'datasets', 'optimise'];

/** Generates, stores, regenerates and exports ADR reports; traces benchmark runs. */
export class ReportService {
  /**
   * Every change to the reports folder runs after the one before it (requests arrive concurrently), callers in turn:
   * in one queue, 31 connections of one token saving 1.9 MB reports held another window's save 7.9 s (re-attack 19).
   */
  private readonly writes = new FairSlots(1);

  constructor(
    private readonly workspace: Workspace,
    private readonly options: ReportServiceOptions = {},
  ) {}

  /** Runs `work` alone, in `caller`'s turn, so numbering, saves, removes and exports never interleave. */
  private serial<T>(work: () => Promise<T>, caller: object = this): Promise<T> {
    return this.writes.run(caller, work);
  }

  list = () => listReports(this.workspace);
  get = (id: string) => readReport(this.workspace, id);
  figure = (id: string, name: string) => readFigure(this.workspace, id, name);

  /** A new report folder from the runs: reports/NNNN-title/. */
  generate(request: ReportGenerateRequest, caller?: object): Promise<ReportDetail> {
    return this.serial(async () => {
      const number = await nextReportNumber(this.workspace);
      const report = await generateReport(this.workspace, request.runIds, { number, title: request.title, sections: request.sections });
      return createReport(this.workspace, report);
    }, caller);
  }

  /**
   * Redraws the report from its runs: every generated block and figure is replaced,
   * the person's text outside the blocks is kept, and the notes say what else happened.
   */
  regenerate(id: string, caller?: object): Promise<ReportDetail> {
    return this.serial(async () => {
      const meta = await readReportMeta(this.workspace, id);
      const current = await readReport(this.workspace, id);
      const fresh = await generateReport(this.workspace, meta.runIds, { number: meta.number, title: meta.title, sections: meta.sections, missingRunIsNote: true });
      const merged = mergeRegenerated(current.markdown, fresh.markdown, meta.blocks);
      return rewriteReport(this.workspace, id, { ...fresh, markdown: merged.markdown, notes: [...fresh.notes, ...merged.notes] });
    }, caller);
  }

  /** A benchmark run's measured steps as a Chrome trace, also written to runs/<id>/trace.json. */
  trace(runId: string): Promise<RunTraceResult> {
    return traceRun(this.workspace, runId);
  }

  save = (id: string, markdown: string, caller?: object) => this.serial(() => saveMarkdown(this.workspace, id, markdown), caller);
  remove = (id: string, caller?: object) => this.serial(() => removeReport(this.workspace, id), caller);

  /** Copies the markdown and its figures into a folder of the workspace (escapes by name or link are refused). */
  async export(id: string, dir: string, caller?: object): Promise<ReportExportResult> {
    const target = this.workspace.resolve(dir);
    const rel = path.relative(this.workspace.root, target);
    const top = rel.split(path.sep)[0];
    if (rel === '' || MANAGED_FOLDERS.includes(top)) {
      throw new ApiError('E_BAD_INPUT', `export to ${JSON.stringify(dir)} refused: ${rel === '' ? 'the workspace root' : `${top}/`} holds what the workbench manages; export to a folder of your own, e.g. exports/${id}`);
    }
    return this.serial(() => this.copyTo(id, target, true), caller);
  }

  /** Copies into a folder the person picks in the desktop shell; refused where there is no dialog. */
  async exportToChosenFolder(id: string): Promise<{ dir: string | null; files: string[] }> {
    if (!this.options.chooseFolder) {
      throw new ApiError(
        'E_BAD_INPUT',
        'choosing a folder needs the desktop app; here, export to a folder of the workspace (reports.export with dir) or copy the markdown',
      );
    }
    reportDir(this.workspace, id); // refuse a bad id before a dialog opens
    const chosen = await this.options.chooseFolder(id);
    if (chosen === null) return { dir: null, files: [] };
    if (!path.isAbsolute(chosen)) throw new ApiError('E_INTERNAL', `the folder dialog returned ${JSON.stringify(chosen)}, not an absolute path`);
    return this.serial(() => this.copyTo(id, chosen, false));
  }

  /** Copies into any folder: for trusted shells only (the CLI's --out); the contract never reaches it. */
  exportTo(id: string, absoluteDir: string): Promise<ReportExportResult> {
    return this.copyTo(id, path.resolve(absoluteDir), false);
  }

  /**
   * Each file is read as itself (a link planted among the report's files is refused) and
   * written by a fresh temp file renamed over its name (a link planted in the target folder is
   * replaced, never written through). `inWorkspace`: the target came from the contract, so it
   * must be a real folder of the workspace; else a trusted shell chose it.
   */
  private async copyTo(id: string, target: string, inWorkspace: boolean): Promise<ReportExportResult> {
    const meta = await readReportMeta(this.workspace, id);
    const source = reportDir(this.workspace, id);
    if (path.resolve(target) === path.resolve(source)) throw new ApiError('E_BAD_INPUT', `${target} is the report's own folder: choose another`);
    const made = inWorkspace && (await entryKind(this.workspace, target)) === null;
    if (inWorkspace) await makeFolder(this.workspace, target);
    else await makeChosenFolder(target);
    const files = [markdownFileOf(id), ...meta.figures.map((f) => f.name)];
    const copied: string[] = [];
    try {
      for (const name of files) {
        await copyFileOut(this.workspace, path.join(source, name), path.join(target, name));
        copied.push(name);
      }
    } catch (err) {
      // Half an export into a folder it made is not one: what it copied goes, and the folder. In a folder that was
      // there, the copies stay: each is whole, and may have replaced a file of the same name.
      if (made) {
        for (const name of copied) await removeEntry(this.workspace, path.join(target, name)).catch(() => undefined);
        await removeEmptyFolder(this.workspace, target);
      }
      throw err;
    }
    return { dir: target, files };
  }
}
