// Assembles an ADR from runs: sections in the order asked, each a generated block
// (or several), and the figures drawn to SVG with the app's own chart builders.

import type { ReportFigure, ReportSection } from '../../api/reports';
import { REPORT_SECTIONS } from '../../api/reports';
import { buildInfo } from '../common/build-info';
import type { Workspace } from '../workspace/workspace';
import { analyseAttempts } from './attempts';
import { blockHashes, renderBlock } from './blocks';
import { figureLink } from './markdown';
import type { FigureSpec, ReportInput, SectionWriters } from './report-model';
import type { ReportContent } from './report-store';
import { SECTION_HEADINGS } from './report-model';
import type { BatchSearchRun, BenchmarkRun, LoaderRun, OptimiseRun, TrainRun } from './report-runs';
import { dataOf, loadReportRuns } from './report-runs';
import { attemptsSection } from './section-attempts';
import { contextSection, reproduceSection, scriptTitle, statusSection } from './section-context';
import { consequencesSection, decisionSection } from './section-decision';
import { limitsSection, phasesSection } from './section-results';
import { renderSvg } from './svg';

const WRITERS: SectionWriters = {
  status: statusSection,
  context: contextSection,
  reproduce: reproduceSection,
  phases: phasesSection,
  limits: limitsSection,
  attempts: attemptsSection,
  decision: decisionSection,
  consequences: consequencesSection,
};

/** What generateReport writes: the store's content, blocks fingerprinted so regenerate can tell the person's edits inside one. */
export type GeneratedReport = ReportContent;

/** "0.1.0 (commit 1a2b3c4)", or the version alone in a packaged app. */
export function trainbenchVersion(): string {
  const b = buildInfo();
  return b.commit ? `${b.version} (commit ${b.commit.slice(0, 7)})` : b.version;
}

/** "mlp on fashion-mnist-train (60000 records)": what the first run trained. */
export function defaultTitle(input: Pick<ReportInput, 'runs'>): string {
  const first = input.runs[0];
  const family = (first.record.config as { spec?: { family?: string } }).spec?.family;
  return family ? `Training performance of ${family} on ${dataOf(first)}` : `Loading ${dataOf(first)}`;
}

export interface GenerateOptions {
  number: number;
  title?: string;
  sections?: readonly ReportSection[];
  now?: Date;
  /** Regenerate: a run deleted since the report was made is left out with a note instead of failing. */
  missingRunIsNote?: boolean;
}

export async function generateReport(workspace: Workspace, runIds: readonly string[], options: GenerateOptions): Promise<GeneratedReport> {
  const loaded = await loadReportRuns(workspace, runIds, { missingIsNote: options.missingRunIsNote });
  const runs = loaded.runs;
  const { baseline, attempts } = analyseAttempts(runs);
  const input: ReportInput = {
    runs,
    benchmarks: runs.filter((r): r is BenchmarkRun => r.kind === 'benchmark'),
    searches: runs.filter((r): r is BatchSearchRun => r.kind === 'batch-search'),
    trains: runs.filter((r): r is TrainRun => r.kind === 'train'),
    optimisations: runs.filter((r): r is OptimiseRun => r.kind === 'optimise'),
    loaders: runs.filter((r): r is LoaderRun => r.kind === 'loader-benchmark'),
    scripts: loaded.scripts,
    baseline,
    attempts,
    generatedAt: options.now ?? new Date(),
    trainbenchVersion: trainbenchVersion(),
    runNotes: loaded.notes,
  };
  const title = options.title ?? (runs.length ? defaultTitle(input) : scriptTitle(input));
  const sections = [...new Set(options.sections ?? REPORT_SECTIONS)];
  const notes = [...loaded.notes];
  const figures: { figure: ReportFigure; svg: string }[] = [];
  const parts: string[] = [`# ${options.number}. ${title}\n`];
  for (const section of sections) {
    // Engine runs first, then the runs of the user's own command: each kind writes its own blocks.
    const out = WRITERS[section](input);
    notes.push(...out.notes);
    const failed = new Map<string, string>();
    for (const f of out.figures) {
      const drawn = draw(f);
      if (typeof drawn === 'string') {
        failed.set(f.name, drawn);
        notes.push(drawn);
      } else if (figures.some((x) => x.figure.name === f.name)) {
        throw new Error(`two figures are named ${f.name}`);
      } else {
        figures.push(drawn);
      }
    }
    parts.push(`## ${SECTION_HEADINGS[section]}\n`);
    for (const block of out.blocks) {
      let body = block.body;
      for (const f of out.figures) if (failed.has(f.name)) body = body.replace(figureLink(f.alt, f.name), failed.get(f.name) ?? '');
      parts.push(`${block.lead ? `${block.lead}\n` : ''}${renderBlock(block.id, body)}`);
    }
  }
  const markdown = parts.join('\n');
  // In the order asked (the first benchmark of each kind is its baseline), once each.
  const kept = new Set([...runs, ...loaded.scripts].map((r) => r.id));
  return { title, runIds: [...new Set(runIds)].filter((id) => kept.has(id)), sections, markdown, figures, notes, blocks: blockHashes(markdown) };
}

/** The figure as SVG, or a line saying why it could not be drawn. */
function draw(f: FigureSpec): { figure: ReportFigure; svg: string } | string {
  try {
    return { figure: { name: f.name, title: f.title, alt: f.alt, runId: f.runId }, svg: renderSvg(f.option, f.width, f.height) };
  } catch (err) {
    return `The figure "${f.title}" could not be drawn (${(err as Error).message}), so it is left out.`;
  }
}
