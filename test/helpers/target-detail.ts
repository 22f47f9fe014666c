// A target's own detail of a result (a batch search's memory model, a benchmark's recipe or ranks), read with the
// kind checked: a test that got the other target's result fails here, naming what it got.
import type { BatchSearchResult, BatchTrial, EngineSearchDetail, EngineTrialDetail } from '../../src-main/api/batch-size';
import type { BenchmarkResult, EngineBenchmarkResult, ScriptBenchmarkResult } from '../../src-main/api/benchmark-result';
import { isEngineBenchmark, isScriptBenchmark } from '../../src-main/api/benchmark-result';

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
