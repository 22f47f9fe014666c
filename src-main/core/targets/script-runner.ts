import type { BatchTrial } from '../../api/batch-size';
import { requireConsent } from '../workspace/command-consent';
import { ApiError } from '../../api/errors';
import { newJobId } from '../../api/ids';
import type { ScriptOverrides, ScriptTrainRequest } from '../../api/script-target';
import type { ScriptBatchSearchRequest, ScriptBenchmarkRequest, ScriptOptimiseRequest } from '../../api/script-target';
import type { EventHub } from '../common/event-hub';
import type { RunningJob, RunningJobs } from '../jobs/running-jobs';
import type { TelemetryService } from '../telemetry/telemetry-service';
import type { Workspace } from '../workspace/workspace';
import { scriptBatchPlan } from './script/script-batch-search';
import { ScriptBenchmarks } from './script/script-benchmark';
import { ScriptTraining } from './script/script-train';
import { openScriptWizard } from './script/script-wizard';
import { loadScriptWizardState, replayTrials, resumedScriptRequest, savedScriptWizard } from './wizard-state';
import type { BatchRequest, BenchmarkRequest, CapabilityOptions, TargetRunner, TrainOptions, TrainRunRequest, WizardOptions, WizardRequest } from './target-runner';

/** What the script runner needs of the workbench. */
export interface ScriptRunnerDeps {
  events: EventHub;
  workspace: Workspace;
  telemetry: TelemetryService;
  /** The workbench's jobs: every launch's kill is wired into its job, so jobs.cancel and closing the shell reach it. */
  jobs: RunningJobs;
}

/**
 * The user's own training command as a target: launched as is with Trainbench's probe (resources/python), which
 * reports steps, phases, losses and memory over a channel of its own and applies the named overrides. runnerFor
 * hands it the requests whose target says `kind: 'script'`, already parsed by the contract.
 */
export class ScriptRunner implements TargetRunner {
  readonly kind = 'script' as const;
  readonly jobNames = { train: 'script run', benchmark: 'script benchmark', batchSearch: 'script batch-size search', optimise: 'script optimisation' } as const;
  private readonly benchmarks: ScriptBenchmarks;
  private readonly training: ScriptTraining;

  constructor(private readonly deps: ScriptRunnerDeps) {
    this.benchmarks = new ScriptBenchmarks(deps.events, deps.telemetry, deps.jobs);
    this.training = new ScriptTraining(deps.events, deps.workspace, deps.telemetry, deps.jobs);
  }

  train(request: TrainRunRequest, job: RunningJob, options: TrainOptions) {
    return this.training.run(request as ScriptTrainRequest & { jobId: string }, job, options);
  }

  benchmark(request: BenchmarkRequest, job: RunningJob, _progress: unknown, options: CapabilityOptions) {
    return Promise.resolve().then(() => this.benchmarks.plan(request as ScriptBenchmarkRequest & { jobId: string }, job, options));
  }

  batchSearch(request: BatchRequest, job: RunningJob, options: CapabilityOptions & { onTrial?: (trial: BatchTrial) => void }) {
    return Promise.resolve().then(() => scriptBatchPlan(request as ScriptBatchSearchRequest & { jobId: string }, job, this.deps, options));
  }

  optimise(request: WizardRequest, job: RunningJob, options: WizardOptions) {
    return openScriptWizard(this.deps, request as ScriptOptimiseRequest & { jobId: string }, job, options);
  }

  /** A stopped script optimisation goes on in a new run from the one named (its baseline and finished trials kept). */
  async resume(runId: string, job: RunningJob, options: WizardOptions) {
    if (options.commandConsent === undefined) {
      throw new ApiError(
        'E_FORBIDDEN',
        `${runId} is a script optimisation: going on with it runs the command its run file names, which a request does not do on a file's word; start it again with its target and resumeFrom ${runId} (the Resume button), or run trainbench optimise --resume ${runId}`,
      );
    }
    // Read once, the run's request and its saved state: what runs is what the consent was checked against.
    const request = await resumedScriptRequest(this.deps.workspace, runId);
    const saved = await loadScriptWizardState(this.deps.workspace, runId, request);
    const { best, exhausted } = replayTrials(saved.target.baseline.overrides as ScriptOverrides, saved.trials);
    // From files anyone may have written: shown escaped, and run only as the fingerprint the person was shown,
    // which covers the settings the saved state goes on with as well as the command.
    const consented = { ...request, goesOnWith: { overrides: best, triedSinceLastKept: [...exhausted] } };
    requireConsent(`${runId} is a script optimisation, which goes on by running its command again`, consented, options.commandConsent);
    // A new run goes on from the one named, under the job that resumes it.
    return openScriptWizard(this.deps, { ...request, jobId: newJobId() }, job, options, saved);
  }

  savedWizard(runId: string) {
    return savedScriptWizard(this.deps.workspace, runId);
  }
}
