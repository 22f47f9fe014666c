import { promises as fs } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../../api/errors';
import type { ReportDetail, ReportExportResult, ReportGenerateRequest, RunTraceResult } from '../../api/reports';
import type { Workspace } from '../workspace';
import { listReports, markdownFileOf, readFigure, readReport, readReportMeta, removeReport, reportDir, saveMarkdown } from './report-store';

/**
 * Asks the person for a folder (the desktop shell's dialog); null when they cancel.
 * Absent in serve mode and the CLI, where no one sits at a dialog on the machine.
 */
export type ChooseFolder = (suggestedName: string) => Promise<string | null>;

export interface ReportServiceOptions {
  chooseFolder?: ChooseFolder;
}

/** Generates, stores, regenerates and exports ADR reports; traces benchmark runs. */
export class ReportService {
  constructor(
    private readonly workspace: Workspace,
    private readonly options: ReportServiceOptions = {},
  ) {}

  list = () => listReports(this.workspace);
  get = (id: string) => readReport(this.workspace, id);
  figure = (id: string, name: string) => readFigure(this.workspace, id, name);

  generate(_request: ReportGenerateRequest): Promise<ReportDetail> {
    return Promise.reject(new ApiError('E_INTERNAL', 'reports.generate is being built on branch reports'));
  }

  regenerate(_id: string): Promise<ReportDetail> {
    return Promise.reject(new ApiError('E_INTERNAL', 'reports.regenerate is being built on branch reports'));
  }

  trace(_runId: string): Promise<RunTraceResult> {
    return Promise.reject(new ApiError('E_INTERNAL', 'runs.trace is being built on branch reports'));
  }

  save = (id: string, markdown: string) => saveMarkdown(this.workspace, id, markdown);
  remove = (id: string) => removeReport(this.workspace, id);

  /** Copies the markdown and its figures into a folder of the workspace (escapes by name or link are refused). */
  async export(id: string, dir: string): Promise<ReportExportResult> {
    return this.copyTo(id, this.workspace.resolve(dir));
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
    return this.copyTo(id, chosen);
  }

  private async copyTo(id: string, target: string): Promise<ReportExportResult> {
    const meta = await readReportMeta(this.workspace, id);
    const source = reportDir(this.workspace, id);
    if (path.resolve(target) === path.resolve(source)) throw new ApiError('E_BAD_INPUT', `${target} is the report's own folder: choose another`);
    await fs.mkdir(target, { recursive: true }).catch((err: Error) => {
      throw new ApiError('E_BAD_INPUT', `cannot create ${target}: ${err.message}`);
    });
    const files = [markdownFileOf(id), ...meta.figures.map((f) => f.name)];
    for (const name of files) await fs.copyFile(path.join(source, name), path.join(target, name));
    return { dir: target, files };
  }
}
