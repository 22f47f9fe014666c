import type { BenchmarkProgress, TrainingBenchmarkRequest } from '../../api/benchmark';
import type { EngineBenchmarkResult, ScriptBenchmarkResult } from '../../api/benchmark-result';
import { ApiError } from '../../api/errors';
import type { ScriptBenchmarkRequest } from '../../api/script-target';
import type { EventHub } from '../common/event-hub';
import { closedToCancel, type RunningJobs } from '../jobs/running-jobs';
import type { Runners } from '../targets/runner-for';
import { runnerFor } from '../targets/runner-for';
import type { BenchmarkRequest, CapabilityOptions, RepetitionProgress } from '../targets/target-runner';
import { createRun } from '../workspace/run-store';
import type { Workspace } from '../workspace/workspace';
import { benchmarkRepetitions } from './benchmark-loop';

export interface BenchmarkOptions extends CapabilityOptions {
  onProgress?: (progress: BenchmarkProgress) => void;
}

/**
 * The training benchmark, either target: `repeat` fresh repetitions (new engine trainers, new launches of the
 * command) of warm-up plus measured steps, aggregated into one result saved as a run of kind `benchmark`.
 */
export class BenchmarkService {
  constructor(
    private readonly runners: Runners,
    private readonly jobs: RunningJobs,
    private readonly events: EventHub,
    private readonly workspace: Workspace,
  ) {}

  run(request: TrainingBenchmarkRequest, options?: BenchmarkOptions): Promise<EngineBenchmarkResult>;
  run(request: ScriptBenchmarkRequest, options?: BenchmarkOptions): Promise<ScriptBenchmarkResult>;
  run(request: BenchmarkRequest, options?: BenchmarkOptions): Promise<EngineBenchmarkResult | ScriptBenchmarkResult>;
  async run(request: BenchmarkRequest, options: BenchmarkOptions = {}): Promise<EngineBenchmarkResult | ScriptBenchmarkResult> {
    const runner = runnerFor(request, this.runners);
    const job = this.jobs.open(request.jobId, runner.jobNames.benchmark);
    const steps = request.steps ?? null;
    const totalSteps = request.warmupSteps + (steps ?? 0);
    const progress = (p: RepetitionProgress) => {
      const full: BenchmarkProgress = { jobId: job.id, target: runner.kind, repetitions: request.repeat, totalSteps, warmupSteps: request.warmupSteps, steps, ...p };
      this.events.emit('benchmark.progress', full);
      options.onProgress?.(full);
    };
    try {
      options.onStart?.(job.id);
      progress({ runId: null, phase: 'preparing', repetition: 0, step: 0, samplesPerSec: null });
      const plan = await runner.benchmark({ ...request, jobId: job.id }, job, progress, options);
      try {
        if (job.cancelled) throw new ApiError('E_CANCELLED', `the ${plan.what} was cancelled before it started`);
        const run = await createRun(this.workspace, 'benchmark', plan.config, plan.computeDevice ? { computeDevice: plan.computeDevice } : {});
        return await benchmarkRepetitions(plan, run, { repeat: request.repeat, totalSteps, cancelled: () => job.cancelled, closeToCancel: () => closedToCancel(job), progress });
      } finally {
        plan.release();
      }
    } finally {
      this.jobs.close(job);
    }
  }
}
