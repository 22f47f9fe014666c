import type { BatchSearchRequest, BatchTrial } from '../../api/batch-size';
import type { TrainingBenchmarkRequest } from '../../api/benchmark';
import type { OptimiseRequest } from '../../api/optimise';
import type { TrainRequest } from '../../api/training';
import type { EngineClient } from '../../engine/engine-client';
import type { EventHub } from '../common/event-hub';
import type { DatasetService } from '../datasets/dataset-service';
import type { RunningJob } from '../jobs/running-jobs';
import type { TelemetryService } from '../telemetry/telemetry-service';
import type { Workspace } from '../workspace/workspace';
import { EngineBatchSearch } from './engine/engine-batch-search';
import { EngineBenchmarks } from './engine/engine-benchmark';
import { trainEngine } from './engine/engine-train';
import type { SearchBatch } from './engine/engine-wizard';
import { EngineWizards } from './engine/engine-wizard';
import type { BatchRequest, BenchmarkRequest, CapabilityOptions, TargetRunner, TrainOptions, TrainRunRequest, WizardOptions, WizardRequest } from './target-runner';

/** What our engine's runner needs of the workbench. */
export interface EngineRunnerDeps {
  engine: EngineClient;
  events: EventHub;
  workspace: Workspace;
  datasets: DatasetService;
  telemetry: TelemetryService;
  /** The batch-size search capability, for the wizard's batch-size candidate (handed in: a runner imports no capability). */
  searchBatch: SearchBatch;
  cancelJob: (jobId: string) => Promise<unknown>;
}

/**
 * Our engine as a target: a model spec trained on a cached dataset in the engine host, every run a fresh
 * trainer. runnerFor hands it the requests without a script target, already parsed by the contract.
 */
export class EngineRunner implements TargetRunner {
  readonly kind = 'engine' as const;
  readonly jobNames = { train: 'run', benchmark: 'benchmark job', batchSearch: 'batch-size search', optimise: 'optimisation' } as const;
  readonly benchmarks: EngineBenchmarks;
  private readonly search: EngineBatchSearch;
  private readonly wizards: EngineWizards;

  constructor(private readonly deps: EngineRunnerDeps) {
    this.benchmarks = new EngineBenchmarks(deps.engine, deps.workspace, deps.datasets, deps.telemetry);
    this.search = new EngineBatchSearch(deps.engine, deps.events, deps.workspace, deps.datasets);
    this.wizards = new EngineWizards({ ...deps, benchmarks: this.benchmarks });
  }

  train(request: TrainRunRequest, job: RunningJob, options: TrainOptions) {
    return trainEngine(this.deps, request as TrainRequest & { jobId: string }, job, options);
  }

  benchmark(request: BenchmarkRequest, job: RunningJob, _progress: unknown, options: CapabilityOptions) {
    return this.benchmarks.plan(request as TrainingBenchmarkRequest & { jobId: string }, job, options);
  }

  batchSearch(request: BatchRequest, job: RunningJob, options: CapabilityOptions & { onTrial?: (trial: BatchTrial) => void }) {
    return this.search.plan(request as BatchSearchRequest & { jobId: string }, job, options);
  }

  optimise(request: WizardRequest, job: RunningJob, options: WizardOptions) {
    return this.wizards.start(request as OptimiseRequest & { jobId: string }, job, options);
  }

  resume(jobId: string, job: RunningJob, options: WizardOptions) {
    return this.wizards.resume(jobId, job, options);
  }

  savedWizard(jobId: string) {
    return this.wizards.saved(jobId);
  }
}
