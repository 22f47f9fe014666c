import type { BatchSearchResult } from '../../api/batch-size';
import { ApiError } from '../../api/errors';
import { closedToCancel, type RunningJobs } from '../jobs/running-jobs';
import type { Runners } from '../targets/runner-for';
import { runnerFor } from '../targets/runner-for';
import type { BatchPoint, BatchRequest, CapabilityOptions } from '../targets/target-runner';
import { createRun } from '../workspace/run-store';
import type { Workspace } from '../workspace/workspace';
import { searchBatches } from './search-loop';

export interface SearchOptions extends CapabilityOptions {
  onTrial?: (trial: BatchPoint) => void;
}

/**
 * The batch-size search, either target: from the target's seed (the engine's memory model; a script's start
 * batch), powers of two up to the first failure, then bisection (search-loop.ts); an out-of-memory error or a
 * killed trial is a data point; every trial is recorded in a run of kind `batch-search`.
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
        try {
          let index = 0;
          const outcome = await searchBatches({ trial: (b) => plan.trial(b, run, index++), cancelled: () => job.cancelled }, plan.seed, plan.maxBatch, plan.ladderFrom);
          // A cancel during the last trial that stopped nothing is honoured; none is taken after this.
          if (closedToCancel(job)) throw new ApiError('E_CANCELLED', `the ${runner.jobNames.batchSearch} was cancelled after its last trial, before its result was recorded`);
          const result = await plan.result(run, outcome, (Date.now() - started) / 1000);
          await run.finish('completed', { result });
          return result;
        } catch (err) {
          throw await run.fail(err);
        }
      } finally {
        await plan.close();
      }
    } finally {
      this.jobs.close(job);
    }
  }
}
