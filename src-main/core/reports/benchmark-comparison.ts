// What a report shows of benchmarks side by side, either target: the phase table and the phase and
// throughput figures. Each target adds its own metrics (the engine's memory model, a script's ranks).
import type { BenchmarkPhases } from '../../api/benchmark';
import { PHASE_NAMES_WITH_OTHER } from '../../api/benchmark';
import type { BenchmarkChartInput } from '../../api/charts/benchmark-charts';
import { phaseStackLabel, phaseStackOption, throughputLabel, throughputOption } from '../../api/charts/benchmark-charts';
import { fmt, table } from './markdown';
import type { FigureSpec } from './report-model';

export interface ComparedBenchmark {
  id: string;
  chart: BenchmarkChartInput;
  phasesMs: BenchmarkPhases;
  phasesPercent: BenchmarkPhases;
}

/** Each phase's ms per step with its share, one column per benchmark. */
export function phaseTable(runs: readonly ComparedBenchmark[], headings: readonly string[], corner = 'Phase'): string {
  return table([corner, ...headings], PHASE_NAMES_WITH_OTHER.map((p) => [p, ...runs.map((r) => `${fmt(r.phasesMs[p])} (${fmt(r.phasesPercent[p], '%')})`)]));
}

/** The time per step by phase and the samples/s with their CI, one bar per benchmark; `names` gives the files and titles. */
export function comparisonFigures(
  runs: readonly ComparedBenchmark[],
  labels: string[],
  names: { phases: string; phasesTitle: string; throughput: string; throughputTitle: string },
): [FigureSpec, FigureSpec] {
  const inputs = runs.map((r) => r.chart);
  const runId = runs.length === 1 ? runs[0].id : null;
  return [
    { name: names.phases, title: names.phasesTitle, alt: phaseStackLabel(inputs, labels), runId, option: phaseStackOption(inputs, labels) },
    { name: names.throughput, title: names.throughputTitle, alt: throughputLabel(inputs, labels), runId, option: throughputOption(inputs, labels) },
  ];
}
