// A target's own detail of a result (a batch search's memory model, a benchmark's recipe or ranks, a wizard's settings), read with the
// kind checked: a test that got the other target's result fails here, naming what it got.
import type { BatchSearchResult, BatchTrial, EngineSearchDetail, EngineTrialDetail } from '../../src-main/api/batch-size';
import type { BenchmarkResult, EngineBenchmarkResult, ScriptBenchmarkResult } from '../../src-main/api/benchmark-result';
import { isEngineBenchmark, isScriptBenchmark } from '../../src-main/api/benchmark-result';
import type { EngineOptimiseResult, ScriptOptimiseRecord, ScriptOptimiseResult } from '../../src-main/api/optimise-result';
import { OptimiseRecordSchema, OptimiseResultSchema, isEngineOptimise, isScriptOptimise } from '../../src-main/api/optimise-result';

export function engineSearch(r: Pick<BatchSearchResult, 'target'>): EngineSearchDetail {
  if (r.target.kind !== 'engine') throw new Error(`expected an engine search, got a ${r.target.kind} one`);
  return r.target;
}

export function engineTrial(t: Pick<BatchTrial, 'target'>): EngineTrialDetail {
  if (t.target.kind !== 'engine') throw new Error(`expected an engine trial, got a ${t.target.kind} one`);
  return t.target;
}

/** A benchmark's result read as the target the test ran, so its own fields (the engine's recipe, a script's ranks) are in reach. */
export function engineBenchmark(r: BenchmarkResult): EngineBenchmarkResult {
  if (!isEngineBenchmark(r)) throw new Error(`expected an engine benchmark, got a ${r.target.kind} one`);
  return r;
}

export function scriptBenchmark(r: BenchmarkResult): ScriptBenchmarkResult {
  if (!isScriptBenchmark(r)) throw new Error(`expected a script benchmark, got a ${r.target.kind} one`);
  return r;
}

/** A wizard's result (JSON from the CLI, a run file, an answer) parsed and read as the target the test ran. */
export function engineWizard(raw: unknown): EngineOptimiseResult {
  const r = OptimiseResultSchema.parse(raw);
  if (!isEngineOptimise(r)) throw new Error(`expected an engine wizard's result, got a ${r.target.kind} one`);
  return r;
}

export function scriptWizard(raw: unknown): ScriptOptimiseResult {
  const r = OptimiseResultSchema.parse(raw);
  if (!isScriptOptimise(r)) throw new Error(`expected a script wizard's result, got a ${r.target.kind} one`);
  return r;
}

/** What a stopped script wizard's run keeps (no final; no baseline when it stopped before one). */
export function scriptWizardRecord(raw: unknown): ScriptOptimiseRecord {
  const r = OptimiseRecordSchema.parse(raw);
  if (r.target.kind !== 'script') throw new Error(`expected a script wizard's record, got a ${r.target.kind} one`);
  return { ...r, target: r.target };
}
