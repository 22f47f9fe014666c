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
