import { ApiError } from '../../api/errors';
import type { OptimiseRequest } from '../../api/optimise';
import type { EngineOptimiseResult, OptimiseResult, ScriptOptimiseResult } from '../../api/optimise-result';
import type { ScriptOptimiseRequest } from '../../api/script-target';
import type { RunningJobs } from '../jobs/running-jobs';
import type { Runners } from '../targets/runner-for';
import { runnerFor } from '../targets/runner-for';
import type { SavedWizard, TargetRunner, WizardOptions, WizardRequest } from '../targets/target-runner';
import { driveWizard } from './wizard-driver';

export type { WizardOptions } from '../targets/target-runner';

/**
 * The optimisation wizard, either target: a baseline, then one change at a time on top of the current best,
 * each measured A/B/A/B and kept only when it beats the noise (wizard-loop.ts); its state saved after every
 * step, so a cancelled or killed wizard goes on (resume) from where it stood.
 */
export class OptimiseService {
  constructor(
    private readonly runners: Runners,
    private readonly jobs: RunningJobs,
  ) {}

  start(request: OptimiseRequest, options?: WizardOptions): Promise<EngineOptimiseResult>;
  start(request: ScriptOptimiseRequest, options?: WizardOptions): Promise<ScriptOptimiseResult>;
  start(request: WizardRequest, options?: WizardOptions): Promise<OptimiseResult>;
  async start(request: WizardRequest, options: WizardOptions = {}): Promise<OptimiseResult> {
    const runner = runnerFor(request, this.runners);
    const job = this.jobs.open(request.jobId, runner.jobNames.optimise);
    try {
      options.onStart?.(job.id);
      // Both targets' wizards answer optimise.state and optimise.resume by their id: one id, one wizard.
      for (const other of Object.values(this.runners)) {
        if ((await other.savedWizard(job.id)) !== undefined) throw new ApiError('E_BAD_INPUT', `an optimisation with the id ${job.id} exists already: resume it, or choose another id`);
      }
      return await driveWizard(await runner.optimise({ ...request, jobId: job.id }, job, options));
    } finally {
      this.jobs.close(job);
    }
  }

  /** Goes on with a cancelled, failed or interrupted wizard (either target's) from its saved state. */
  async resume(jobId: string, options: WizardOptions = {}): Promise<OptimiseResult> {
    if (this.jobs.has(jobId)) throw new ApiError('E_BAD_INPUT', `optimisation ${jobId} is running in this process already`);
    // Opened before the saved state is read, so a cancel that comes meanwhile reaches the wizard.
    const job = this.jobs.open(jobId, 'optimisation');
    try {
      options.onStart?.(job.id);
      const { runner } = await this.find(jobId);
      if (job.cancelled) throw new ApiError('E_CANCELLED', `optimisation ${jobId} was cancelled before it went on`);
      const session = await runner.resume(jobId, job, options);
      // A finished wizard answers with its result; a stopped one goes on.
      return 'target' in session && 'rules' in session ? await driveWizard(session) : session;
    } finally {
      this.jobs.close(job);
    }
  }

  /** What the wizard of this id has measured so far: an engine wizard's saved state, or a script wizard's record. */
  async state(jobId: string): Promise<SavedWizard> {
    return (await this.find(jobId)).saved;
  }

  /** The runner whose wizard has this id: each looks for its own (an engine wizard's state, a script wizard's run). */
  private async find(jobId: string): Promise<{ runner: TargetRunner; saved: SavedWizard }> {
    for (const runner of Object.values(this.runners)) {
      const saved = await runner.savedWizard(jobId);
      if (saved !== undefined) return { runner, saved };
    }
    throw new ApiError('E_BAD_INPUT', `no optimisation with the id ${jobId} in this workspace (looked for optimise/${jobId}/state.json and a script optimisation run runs/${jobId})`);
  }
}
