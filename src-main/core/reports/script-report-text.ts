// Words and lookups the report's script sections share: what a script run is called, what it ran,
// with which overrides, and intervals as text.
import type { ScriptTarget } from '../../api/script-target';
import { commandText } from '../targets/script/script-benchmark';
import type { Interval } from '../stats/bootstrap';
import { fmt, signedPercent } from './markdown';
import type { ReportInput } from './report-model';
import type { ScriptBenchmarkRun, ScriptReportRun } from './report-runs';

export const KIND_NAMES: Record<ScriptReportRun['kind'], string> = {
  'script-benchmark': 'benchmark of your command',
  'script-batch-search': 'batch-size search on your command',
  'script-optimise': 'optimisation wizard on your command',
  'script-train': 'training run of your command',
};

export const ci = (i: { low: number; high: number }) => `${fmt(i.low)} to ${fmt(i.high)}`;
export const speedupText = (s: Interval) => `${signedPercent(s.median - 1)} (95% CI ${signedPercent(s.low - 1)} to ${signedPercent(s.high - 1)})`;
/** Values of variables that look like credentials stay out of a document people share. */
export const SECRET = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;
export const envValue = (name: string, value: string) => (SECRET.test(name) ? '<redacted>' : value);

export type Overrides = Record<string, number | boolean | string>;

export function targetOf(run: ScriptReportRun): ScriptTarget {
  if (run.kind === 'script-batch-search') return (run.record.config as { target: ScriptTarget }).target;
  return run.kind === 'script-benchmark' || run.kind === 'script-optimise' ? run.result.target.command : run.result.target;
}
export function overridesOf(run: ScriptReportRun): Overrides {
  if (run.kind === 'script-benchmark') return run.result.target.overrides;
  if (run.kind === 'script-train') return run.result.overrides;
  if (run.kind === 'script-optimise') return run.result.target.baseline.overrides;
  return ((run.record.config as { overrides?: Overrides }).overrides ?? {}) as Overrides;
}
export const overridesText = (o: Overrides) => Object.entries(o).map(([k, v]) => `${k}=${String(v)}`).join(', ') || 'none';
export const config = (run: ScriptReportRun) => run.record.config as Record<string, unknown> & { request?: Record<string, unknown> };

/** What the runs of one command have in common, so a report about one script says it once. */
export function commands(input: ReportInput): string[] {
  return [...new Set(input.scripts.map((r) => commandText(targetOf(r))))];
}

export const benchmarks = (input: ReportInput) => input.scripts.filter((r): r is ScriptBenchmarkRun => r.kind === 'script-benchmark');
