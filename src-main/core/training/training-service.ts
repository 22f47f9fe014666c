import type { ScriptTrainRequest } from '../../api/script-target';
import type { EngineTrainRun, ScriptTrainRun, TrainRunResult } from '../../api/train-result';
import type { TrainRequest } from '../../api/training';
import type { RunningJobs } from '../jobs/running-jobs';
import type { Runners } from '../targets/runner-for';
import { runnerFor } from '../targets/runner-for';
import type { TrainOptions, TrainRunRequest } from '../targets/target-runner';

/**
 * A whole training run, either target: our engine trains the model to its last epoch, or the user's command
 * runs to its own end with the probe. The job's id names the run's folder, so Cancel (jobs.cancel, the CLI's
 * Ctrl-C) reaches it from the moment it is asked for, while its data is still being prepared.
 */
export class TrainingService {
  constructor(
    private readonly runners: Runners,
    private readonly jobs: RunningJobs,
  ) {}

  run(request: TrainRequest, options?: TrainOptions): Promise<EngineTrainRun>;
  run(request: ScriptTrainRequest, options?: TrainOptions): Promise<ScriptTrainRun>;
  run(request: TrainRunRequest, options?: TrainOptions): Promise<TrainRunResult>;
  async run(request: TrainRunRequest, options: TrainOptions = {}): Promise<TrainRunResult> {
    const runner = runnerFor(request, this.runners);
    const job = this.jobs.open(request.jobId, `a ${runner.jobNames.train} with the id`);
    try {
      options.onStart?.(job.id);
      return await runner.train({ ...request, jobId: job.id }, job, options);
    } finally {
      this.jobs.close(job);
    }
  }
}
