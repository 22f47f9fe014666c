import type { EChartsCoreOption } from 'echarts/core';

import type { ReportSection } from '../../api/reports';
import type { Attempt } from './attempts';
import type { BatchSearchRun, BenchmarkRun, LoaderRun, OptimiseRun, ReportRun, ScriptReportRun, TrainRun } from './report-runs';

/** A chart to draw beside the markdown. */
export interface FigureSpec {
  name: string;
  title: string;
  alt: string;
  runId: string | null;
  option: EChartsCoreOption;
  width?: number;
  height?: number;
}

/** A generated block and the text the generator puts before it on first generation (a heading). */
export interface BlockSpec {
  id: string;
  lead: string;
  body: string;
}

export interface SectionOutput {
  blocks: BlockSpec[];
  figures: FigureSpec[];
  /** Charts left out and the like, for the report's notes. */
  notes: string[];
}

/** Everything a section reads: the runs by kind, the attempts against the baseline, and who generates. */
export interface ReportInput {
  runs: ReportRun[];
  benchmarks: BenchmarkRun[];
  searches: BatchSearchRun[];
  trains: TrainRun[];
  optimisations: OptimiseRun[];
  loaders: LoaderRun[];
  /** Runs of the user's own command, in the order asked (the first benchmark is their baseline). */
  scripts: ScriptReportRun[];
  baseline: BenchmarkRun | null;
  attempts: Attempt[];
  generatedAt: Date;
  trainbenchVersion: string;
  /** The runs left out, and why. */
  runNotes: string[];
}

export type SectionWriter = (input: ReportInput) => SectionOutput;
export type SectionWriters = Record<ReportSection, SectionWriter>;

/** One generated block with its figures. */
export const block = (id: string, body: string, figures: FigureSpec[] = []): SectionOutput => ({ blocks: [{ id, lead: '', body }], figures, notes: [] });

/**
 * A section written for both targets: the engine runs' part, then the user's command's after it, each only
 * where the report has such runs (one writer per section; each target's words are its own).
 */
export function bothTargets(engine: SectionWriter, script: SectionWriter): SectionWriter {
  return (input) => {
    const outs = [...(input.runs.length ? [engine(input)] : []), ...(input.scripts.length ? [script(input)] : [])];
    return { blocks: outs.flatMap((o) => o.blocks), figures: outs.flatMap((o) => o.figures), notes: outs.flatMap((o) => o.notes) };
  };
}

export const SECTION_HEADINGS: Record<ReportSection, string> = {
  status: 'Status',
  context: 'Context',
  reproduce: 'How to reproduce',
  phases: 'Baseline metrics and phase breakdown',
  limits: 'Physical limits',
  attempts: 'Attempts',
  decision: 'Decision',
  consequences: 'Consequences',
};
