// The runs a report is written from: each read from its own files and checked against its kind's schema.
import path from 'node:path';

import type { BatchSearchResult, EngineSearchDetail } from '../../api/batch-size';
import { BatchSearchResultSchema } from '../../api/batch-size';
import type { EngineBenchmarkResult, ScriptBenchmarkResult } from '../../api/benchmark-result';
import { BenchmarkResultSchema, isEngineBenchmark, isScriptBenchmark } from '../../api/benchmark-result';
import type { LoaderBenchResult } from '../../api/datasets';
import { LoaderBenchResultSchema } from '../../api/datasets';
import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import type { EngineOptimiseResult, ScriptOptimiseResult } from '../../api/optimise-result';
import { OptimiseResultSchema, isEngineOptimise, isScriptOptimise } from '../../api/optimise-result';
import type { RunRecordJson } from '../../api/run-record';
import type { ScriptTarget } from '../../api/script-target';
import type { TelemetrySample } from '../../api/telemetry';
import type { EngineTrainRun, ScriptTrainRun } from '../../api/train-result';
import { isEngineTrainRun, isScriptTrainRun, TrainRunResultSchema } from '../../api/train-result';
import type { TrainStepEvent } from '../../api/training';
import { readRunDetail } from '../workspace/run-reader';
import { readRunTelemetry } from '../workspace/run-telemetry';
import type { Workspace } from '../workspace/workspace';
import { markdownText } from './markdown';

interface RunBase {
  id: string;
  record: RunRecordJson;
  /** runs/<id>, relative to the workspace. */
  dir: string;
}
export interface BenchmarkRun extends RunBase {
  kind: 'benchmark';
  result: EngineBenchmarkResult;
  telemetry: TelemetrySample[];
}
/** An engine search's result: its memory model's detail, and a capacity (the device's or the CPU's limit). */
export type EngineSearchResult = BatchSearchResult & { target: EngineSearchDetail; capacityBytes: number };
export interface BatchSearchRun extends RunBase {
  kind: 'batch-search';
  result: EngineSearchResult;
}
export interface TrainRun extends RunBase {
  kind: 'train';
  result: EngineTrainRun;
  steps: TrainStepEvent[];
  telemetry: TelemetrySample[];
}
export interface OptimiseRun extends RunBase {
  kind: 'optimise';
  result: EngineOptimiseResult;
  telemetry: TelemetrySample[];
}
export interface LoaderRun extends RunBase {
  kind: 'loader-benchmark';
  result: LoaderBenchResult;
  telemetry: TelemetrySample[];
}
export type ReportRun = BenchmarkRun | BatchSearchRun | TrainRun | OptimiseRun | LoaderRun;

/** Runs of a user's own command (config.target.kind 'script'): their results have their own schemas. */
export interface ScriptBenchmarkRun extends RunBase {
  kind: 'script-benchmark';
  result: ScriptBenchmarkResult;
  telemetry: TelemetrySample[];
}
export interface ScriptBatchRun extends RunBase {
  kind: 'script-batch-search';
  result: BatchSearchResult;
}
export interface ScriptOptimiseRun extends RunBase {
  kind: 'script-optimise';
  result: ScriptOptimiseResult;
}
export interface ScriptTrainReportRun extends RunBase {
  kind: 'script-train';
  result: ScriptTrainRun;
  telemetry: TelemetrySample[];
}
export type ScriptReportRun = ScriptBenchmarkRun | ScriptBatchRun | ScriptOptimiseRun | ScriptTrainReportRun;

export const SCRIPT_KIND_NAMES: Record<ScriptReportRun['kind'], string> = {
  'script-benchmark': 'benchmark of your command',
  'script-batch-search': 'batch-size search on your command',
  'script-optimise': 'optimisation wizard on your command',
  'script-train': 'training run of your command',
};

export type Overrides = Record<string, number | boolean | string>;

/** The command a script run measured, whichever capability ran it. */
export function targetOf(run: ScriptReportRun): ScriptTarget {
  if (run.kind === 'script-batch-search') return (run.record.config as { target: ScriptTarget }).target;
  return run.result.target.command;
}

/** The overrides a script run started from. */
export function overridesOf(run: ScriptReportRun): Overrides {
  if (run.kind === 'script-benchmark') return run.result.target.overrides;
  if (run.kind === 'script-train') return run.result.target.overrides;
  if (run.kind === 'script-optimise') return run.result.target.baseline.overrides;
  return ((run.record.config as { overrides?: Overrides }).overrides ?? {}) as Overrides;
}
export const overridesText = (o: Overrides) => Object.entries(o).map(([k, v]) => `${k}=${String(v)}`).join(', ') || 'none';

export const scriptBenchmarks = (input: { scripts: readonly ScriptReportRun[] }) => input.scripts.filter((r): r is ScriptBenchmarkRun => r.kind === 'script-benchmark');

/** Whether a run measured a user's own command rather than an engine model. */
export function isScriptRun(record: RunRecordJson): boolean {
  return (record.config as { target?: { kind?: unknown } } | undefined)?.target?.kind === 'script';
}

export const REPORTED_KINDS = ['benchmark', 'batch-search', 'train', 'optimise', 'loader-benchmark'] as const;

/** The training options the run used (an optimise run keeps them in its request's target). */
export function optionsOf(run: ReportRun): Record<string, unknown> {
  const config = run.record.config as { options?: Record<string, unknown>; request?: { target?: { options?: Record<string, unknown> } } } & Record<string, unknown>;
  // A loader benchmark's request is flat: the settings that mean the same as a training option.
  if (run.kind === 'loader-benchmark') return { device: config.device, batchSize: config.batchSize, sampleRatio: config.sampleRatio };
  return (run.kind === 'optimise' ? config.request?.target?.options : config.options) ?? {};
}

/** "fashion-mnist-train (60000 records)": the data the run trained on. */
export function dataOf(run: ReportRun): string {
  if (run.kind === 'loader-benchmark') return run.result.dataset;
  if (run.kind === 'batch-search' || run.kind === 'benchmark') return run.result.target.data;
  if (run.kind !== 'optimise') return run.result.target.data;
  const at = run.result.title.indexOf(' on ');
  return at < 0 ? run.result.title : run.result.title.slice(at + 4);
}

export interface LoadedRuns {
  runs: ReportRun[];
  /** Runs of the user's own command, written up after the engine's in each section (report-model.ts bothTargets). */
  scripts: ScriptReportRun[];
  /** Runs left out, and why (not completed, a kind reports do not cover, a result that does not read). */
  notes: string[];
}

/** Telemetry the run recorded, as runs.get reads it (run-telemetry.ts: every file of it, bounded), its strings made printable. */
async function readTelemetry(workspace: Workspace, id: string): Promise<TelemetrySample[]> {
  return printableStrings(await readRunTelemetry(workspace, id));
}

/**
 * A run file's text as the ADR may hold it: every string and key through markdownText, so a tampered run.json
 * cannot start a line of its own in the markdown (a newline and "## Decision" in its hostname), reorder
 * what follows (bidi marks), or add HTML, a comment hiding the rest, a link or an image (`<h2>`, `<!--`,
 * `[x](url)`). Done once, as the runs load, so no section has to remember it.
 */
function printableStrings<T>(value: T): T {
  if (typeof value === 'string') return markdownText(value) as T;
  if (Array.isArray(value)) return value.map(printableStrings) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [markdownText(k), printableStrings(v)])) as T;
}

function parseResult<T>(schema: { safeParse(x: unknown): { success: true; data: T } | { success: false; error: import('zod').ZodError } }, record: RunRecordJson, id: string): T {
  const parsed = schema.safeParse(record.result);
  if (!parsed.success) throw new ApiError('E_DATA', `run ${id} (${record.kind}): its result does not read as one: ${formatIssues(parsed.error, 'result')}`);
  return parsed.data;
}

/** A benchmark's result as its run's config says it is (a result of the other target is a tampered or broken file). */
/** A result of the target the run's config names (benchmark and wizard results hold either). */
function ofTarget<R extends { target: { kind: string } }, T extends R>(r: R, is: (r: R) => r is T, id: string): T {
  if (!is(r)) throw new ApiError('E_DATA', `run ${id}: its result is of the other target than its config names`);
  return r;
}

function engineSearch(r: BatchSearchResult, id: string): EngineSearchResult {
  if (r.target.kind !== 'engine' || r.capacityBytes === null) throw new ApiError('E_DATA', `run ${id} (batch-search): its result is a script's, but its config names the engine`);
  return r as EngineSearchResult;
}

/** Reads every run; refuses when one does not exist (unless missingIsNote) or when none of them can be written up. */
export async function loadReportRuns(workspace: Workspace, ids: readonly string[], options: { missingIsNote?: boolean } = {}): Promise<LoadedRuns> {
  const runs: ReportRun[] = [];
  const scripts: ScriptReportRun[] = [];
  const notes: string[] = [];
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) continue;
    seen.add(id);
    let detail;
    try {
      detail = await readRunDetail(workspace, id);
    } catch (err) {
      // Regenerating a report whose run was deleted since: say so and go on; a new report names only runs that exist.
      if (!options.missingIsNote) throw err;
      notes.push(`Run ${id} cannot be read any more (${(err as Error).message}); it is left out.`);
      continue;
    }
    const stored = detail.record as RunRecordJson;
    const dir = path.posix.join('runs', id);
    // A batch-size search cancelled after some trials kept their answer, labelled in its verdict: it is reported as such.
    const partialSearch = stored.status === 'cancelled' && stored.kind === 'batch-search' && stored.result != null;
    if (stored.status !== 'completed' && !partialSearch) {
      const why = stored.error ? `${stored.error.code}: ${stored.error.message}` : detail.summary.interruption ?? 'no result';
      notes.push(`Run ${id} (${stored.kind}) is ${detail.summary.status} (${why}), so it has no results to report; it is left out.`);
      continue;
    }
    const record = printableStrings(stored);
    try {
      if (isScriptRun(record)) {
        if (record.kind === 'benchmark') {
          scripts.push({ kind: 'script-benchmark', id, record, dir, result: ofTarget(parseResult(BenchmarkResultSchema, record, id), isScriptBenchmark, id), telemetry: await readTelemetry(workspace, id) });
        } else if (record.kind === 'batch-search') {
          scripts.push({ kind: 'script-batch-search', id, record, dir, result: parseResult(BatchSearchResultSchema, record, id) });
        } else if (record.kind === 'optimise') {
          scripts.push({ kind: 'script-optimise', id, record, dir, result: ofTarget(parseResult(OptimiseResultSchema, record, id), isScriptOptimise, id) });
        } else if (record.kind === 'train') {
          scripts.push({ kind: 'script-train', id, record, dir, result: ofTarget(parseResult(TrainRunResultSchema, record, id), isScriptTrainRun, id), telemetry: await readTelemetry(workspace, id) });
        } else {
          notes.push(`Run ${id} is a ${record.kind} run of a script; reports cover its benchmarks, batch-size searches, optimisations and training runs, so it is left out.`);
        }
      } else if (record.kind === 'benchmark') {
        runs.push({ kind: 'benchmark', id, record, dir, result: ofTarget(parseResult(BenchmarkResultSchema, record, id), isEngineBenchmark, id), telemetry: await readTelemetry(workspace, id) });
      } else if (record.kind === 'batch-search') {
        runs.push({ kind: 'batch-search', id, record, dir, result: engineSearch(parseResult(BatchSearchResultSchema, record, id), id) });
      } else if (record.kind === 'optimise') {
        runs.push({ kind: 'optimise', id, record, dir, result: ofTarget(parseResult(OptimiseResultSchema, record, id), isEngineOptimise, id), telemetry: await readTelemetry(workspace, id) });
      } else if (record.kind === 'loader-benchmark') {
        runs.push({ kind: 'loader-benchmark', id, record, dir, result: parseResult(LoaderBenchResultSchema, record, id), telemetry: await readTelemetry(workspace, id) });
      } else if (record.kind === 'train') {
        const steps = detail.events.filter((e): e is TrainStepEvent => e.type === 'step');
        runs.push({ kind: 'train', id, record, dir, result: ofTarget(parseResult(TrainRunResultSchema, record, id), isEngineTrainRun, id), steps, telemetry: await readTelemetry(workspace, id) });
      } else {
        notes.push(`Run ${id} is a ${record.kind} run; reports cover ${REPORTED_KINDS.join(', ')} runs, so it is left out.`);
      }
    } catch (err) {
      notes.push(`${(err as Error).message}; it is left out.`);
    }
  }
  if (runs.length + scripts.length === 0) {
    throw new ApiError('E_BAD_INPUT', `none of the runs ${ids.join(', ')} can be written up: ${notes.join(' ')}`);
  }
  return { runs, scripts, notes };
}
