// The engine's own detail of a batch-size search (its memory model, buffers, seed), read with the kind checked:
// a test that got a script's result fails here, naming what it got.
import type { BatchSearchResult, BatchTrial, EngineSearchDetail, EngineTrialDetail } from '../../src-main/api/batch-size';

export function engineSearch(r: Pick<BatchSearchResult, 'target'>): EngineSearchDetail {
  if (r.target.kind !== 'engine') throw new Error(`expected an engine search, got a ${r.target.kind} one`);
  return r.target;
}

export function engineTrial(t: Pick<BatchTrial, 'target'>): EngineTrialDetail {
  if (t.target.kind !== 'engine') throw new Error(`expected an engine trial, got a ${t.target.kind} one`);
  return t.target;
}
