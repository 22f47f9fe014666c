import type { BatchSearchResult } from '../../api/batch-size';
import { ApiError } from '../../api/errors';
import { closedToCancel, type RunningJobs } from '../jobs/running-jobs';
import type { Runners } from '../targets/runner-for';
import { runnerFor } from '../targets/runner-for';
import type { BatchPoint, BatchRequest, CapabilityOptions } from '../targets/target-runner';
import { createRun } from '../workspace/run-store';
import type { Workspace } from '../workspace/workspace';
import { searchBatches } from './search-loop';

/** A search cancelled after some trials: E_CANCELLED, with the answer from those trials (the CLI prints it). */
export class SearchCancelled extends ApiError {
  constructor(
    message: string,
    readonly partial: BatchSearchResult,
  ) {
    super('E_CANCELLED', message);
  }
}

/** The answer of a cancelled search's finished trials, labelled as theirs only. */
function partialResult(result: BatchSearchResult): BatchSearchResult {
  const n = result.trials.length;
  return { ...result, cancelledAfterTrials: n, verdict: `cancelled after ${n} trial${n === 1 ? '' : 's'}; from ${n === 1 ? 'it' : 'those'} alone: ${result.verdict}` };
}

export interface SearchOptions extends CapabilityOptions {
  onTrial?: (trial: BatchPoint) => void;
}

/**
 * The batch-size search, either target: from the target's seed (the engine's memory model; a script's start
 * batch), powers of two up to the first failure, then bisection (search-loop.ts); an out-of-memory error or a
 * killed trial is a data point; every trial is recorded in a run of kind `batch-search`. A cancelled search keeps the
 * answer of its finished trials in its run, labelled (`cancelledAfterTrials`).
 */
export class BatchSizeService {
  constructor(
    private readonly runners: Runners,
    private readonly jobs: RunningJobs,
    private readonly workspace: Workspace,
  ) {}

  async search(request: BatchRequest, options: SearchOptions = {}): Promise<BatchSearchResult> {
    const runner = runnerFor(request, this.runners);
    const job = this.jobs.open(request.jobId, `a ${runner.jobNames.batchSearch} with the id`);
    const started = Date.now();
    try {
      options.onStart?.(job.id);
      const plan = await runner.batchSearch({ ...request, jobId: job.id }, job, options);
      try {
        const run = await createRun(this.workspace, 'batch-search', plan.config, plan.computeDevice ? { computeDevice: plan.computeDevice } : {});
        let recorded = false;
        try {
          let index = 0;
          const outcome = await searchBatches({ trial: (b) => plan.trial(b, run, index++), cancelled: () => job.cancelled }, plan.seed, plan.maxBatch, plan.ladderFrom);
          // A cancel during the last trial that stopped nothing is honoured; none is taken after this.
          const stopped = outcome.stopped ?? (closedToCancel(job) ? new ApiError('E_CANCELLED', `the ${runner.jobNames.batchSearch} was cancelled after its last trial, before its result was recorded`) : null);
          if (stopped && outcome.trials.length === 0) throw stopped;
          const result = await plan.result(run, { ...outcome, cancelled: stopped !== null }, (Date.now() - started) / 1000);
          if (!stopped) {
            await run.finish('completed', { result });
            return result;
          }
          // Cancelled after some trials: the run keeps their answer, labelled, so it can be opened again and reported.
          const partial = partialResult(result);
          await run.finish('cancelled', { result: partial, error: stopped.toPayload() });
          recorded = true;
          throw new SearchCancelled(stopped.message, partial);
        } catch (err) {
          throw recorded ? err : await run.fail(err);
        }
      } finally {
        await plan.close();
      }
    } finally {
      this.jobs.close(job);
    }
  }
}
