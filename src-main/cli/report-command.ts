import path from 'node:path';

import { Command, InvalidArgumentError } from 'commander';

import type { ReportDetail, ReportSection } from '../api/reports';
import { REPORT_SECTIONS } from '../api/reports';
import { printable } from '../api/shell-word';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { jsonText, textOut } from './json-out';

/** "status,context,attempts": sections in the order given, each one of REPORT_SECTIONS. */
export function parseSections(value: string): ReportSection[] {
  const names = value.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = names.filter((n) => !(REPORT_SECTIONS as readonly string[]).includes(n));
  if (bad.length || names.length === 0) {
    throw new InvalidArgumentError(`--sections takes a comma-separated list of ${REPORT_SECTIONS.join(', ')}; ${bad.length ? `not ${bad.map((b) => JSON.stringify(b)).join(', ')}` : 'got none'}`);
  }
  return names as ReportSection[];
}

interface ReportFlags {
  out?: string;
  title?: string;
  sections?: ReportSection[];
  json?: boolean;
  workspace: string;
}

/** `trainbench report <run-id>...`: an ADR from the runs, in the workspace's reports/ (and copied to --out). */
export function reportCommand(out: NodeJS.WritableStream = process.stdout): Command {
  return new Command('report')
    .description('write an ADR (markdown + SVG charts) from benchmark, batch-size search, optimisation, training and data-loader runs')
    .argument('<run-id...>', 'the runs, baseline benchmark first (trainbench runs lists them)')
    .option('--out <dir>', 'also copy the markdown and charts into this folder')
    .option('--title <text>', 'the report title (default: from the first run)')
    .option('--sections <list>', `sections in order, comma-separated (default: ${REPORT_SECTIONS.join(',')})`, parseSections)
    .option('--json', 'print the report (markdown, figures, notes) as JSON')
    .option('--workspace <dir>', 'workspace folder (the report is saved in its reports/)', defaultWorkspaceDir())
    .action(async (runIds: string[], flags: ReportFlags) => {
      const services = await createServices({ workspaceDir: flags.workspace });
      try {
        const report = (await services.router.dispatch('reports.generate', { runIds, title: flags.title, sections: flags.sections })) as ReportDetail;
        const exported = flags.out ? await services.reports.exportTo(report.summary.id, path.resolve(flags.out)) : null;
        if (flags.json) {
          out.write(jsonText({ ...report, exported }, 2) + '\n');
          return;
        }
        const lines = [
          `report   ${printable(report.summary.title)}`,
          `saved    ${path.join(services.workspace.root, report.summary.path)} (${report.figures.length} chart${report.figures.length === 1 ? '' : 's'} beside it)`,
          ...(exported ? [`copied   ${exported.dir} (${exported.files.join(', ')})`] : []),
          // Notes may quote a run's file (a failed run's error): escaped, as its title is.
          ...report.notes.map((n) => `note     ${printable(n)}`),
        ];
        out.write(textOut(lines.join('\n')) + '\n');
      } finally {
        await services.dispose();
      }
    });
}
