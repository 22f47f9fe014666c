import os from 'node:os';

import { ApiError } from '../../../api/errors';
import { formatIssues } from '../../../api/format-issues';
import type { OptimiseProgress, OptimiseTrial } from '../../../api/optimise';
import type { OptimiseStatus } from '../../../api/optimise';
import type { ScriptOptimiseRecord, ScriptOptimiseResult } from '../../../api/optimise-result';
import { OptimiseResultSchema, isScriptOptimise } from '../../../api/optimise-result';
import type { ScriptOptimiseRequest, ScriptOverrides } from '../../../api/script-target';
import { phaseShares } from '../../stats/benchmark-summary';
import type { EventHub } from '../../common/event-hub';
import type { RunRecord } from '../../workspace/run-store';
import { createRun } from '../../workspace/run-store';
import { medianInterval } from '../../stats/medians';
import type { ScriptRepetition } from './wizard-launches';
import { LAUNCH_TELEMETRY_MS, ScriptLaunches } from './wizard-launches';
import type { TelemetryService } from '../../telemetry/telemetry-service';
import { scriptBound, scriptDiagnosis } from '../../knobs/diagnosis';
import type { Workspace } from '../../workspace/workspace';
import { commandText } from './script-benchmark';
import { closedToCancel, type RunningJob, type RunningJobs } from '../../jobs/running-jobs';
import { requireAbsoluteCwd } from '../../script/launcher';
import type { BaselineMeasures, FinalComparison, LoopProgress, SayPhase, SearchState, WizardOptions, WizardRules, WizardSession } from '../target-runner';
import { loadScriptWizardState, replayTrials, saveScriptWizardState } from '../wizard-state';

/** What the script's wizard needs of the workbench. */
export interface ScriptWizardDeps {
  workspace: Workspace;
  events: EventHub;
  jobs: RunningJobs;
  /** Watches each launch for what else the machine did (confounders). */
  telemetry: TelemetryService;
}

/** The baseline as measured, with the overrides it ran with (the event a watching window gets carries them). */
type Baseline = ScriptOptimiseResult['baseline'] & { overrides: ScriptOverrides };
type Loader = ScriptOptimiseResult['target']['loader'];

/**
 * The optimisation wizard (core/optimise/wizard-loop.ts, the engine's too) on a user's command
 * (core/targets/script-runner.ts): a baseline of `repeat` launches, then one override at a time on
 * top of the current best, measured A/B/A/B. Every launch is seeded alike and its mean loss compared
 * (the preset's tolerance), unless the script's loss does not reproduce: then a kept change says it was
 * kept without a loss check. A change of the random streams (DataLoader workers) runs pair i on stream i
 * and is judged against the loss's spread across streams (ADR 0042), at no launch more. The batch size is
 * a recipe change: proposed, kept only when allowed.
 *
 * The wizard is one script job: cancelling it kills the launch in flight; the
 * run is recorded cancelled (or failed) with what it had measured, so the
 * finished trials of a stopped wizard are not lost (ScriptOptimiseRecord).
 */
export async function openScriptWizard(
  deps: ScriptWizardDeps,
  request: ScriptOptimiseRequest & { jobId: string },
  job: RunningJob,
  options: WizardOptions = {},
  /** The resumed run's state as the caller read (and checked) it: not read again. */
  saved?: ScriptOptimiseRecord,
): Promise<WizardSession<ScriptOverrides, ScriptRepetition>> {
  requireAbsoluteCwd(request.target);
  const { workspace, telemetry } = deps;
  const started = Date.now();
  // Held across the launches: nvidia-smi starts once, not inside each launch's measured steps.
  const held = await telemetry.hold(LAUNCH_TELEMETRY_MS);
  try {
    // Checked before a run is created: a refused resume records nothing.
    const resumed = request.resumeFrom ? (saved ?? (await loadScriptWizardState(workspace, request.resumeFrom, request))) : null;
    // The run's id is the request's job id (the job's own, but for a resume by the CLI): optimise.state reads the wizard by it.
    const run = await createRun(workspace, 'optimise', { target: request.target, request, jobId: job.id }, { id: request.jobId });
    return new ScriptWizard(request, run, deps, options, started, job, resumed, () => held.release());
  } catch (err) {
    held.release();
    throw err;
  }
}

/**
 * The optimisation wizard on a user's command (the one driver is core/optimise/wizard-driver.ts): a baseline of
 * `repeat` launches, then one override at a time on top of the current best, measured A/B/A/B. Every launch is
 * seeded alike and its mean loss compared (the preset's tolerance), unless the script's loss does not reproduce:
 * then a kept change says it was kept without a loss check; a change of the random streams is compared across
 * streams instead (ADR 0042). The batch size is a recipe change: proposed, kept only when allowed. A cancel kills
 * the launch in flight; the run is recorded cancelled (or failed) with what it had measured, so the finished trials
 * of a stopped wizard are not lost (ScriptOptimiseRecord).
 */
class ScriptWizard implements WizardSession<ScriptOverrides, ScriptRepetition> {
  private readonly events: EventHub;
  readonly target: ScriptLaunches;
  readonly rules: WizardRules;
  private measured: Baseline | null = null;
  private loader: Loader = null;
  readonly state: SearchState<ScriptOverrides>;
  private finished = false;

  constructor(
    private readonly request: ScriptOptimiseRequest,
    private readonly run: RunRecord,
    deps: ScriptWizardDeps,
    private readonly options: WizardOptions,
    private readonly started: number,
    private readonly job: RunningJob,
    /** What the run this one resumes had measured; null for a fresh wizard. */
    private readonly resumed: ScriptOptimiseRecord | null,
    private readonly release: () => void,
  ) {
    this.events = deps.events;
    this.state = { best: request.overrides, trials: [], exhausted: [], skipped: [] };
    this.target = new ScriptLaunches(
      request,
      run,
      deps.jobs,
      job,
      (stream, line, launch) => {
        this.events.emit('script.output', { jobId: job.id, runId: run.id, repetition: launch, stream, line });
        this.options.onOutput?.(stream, line, launch);
      },
      deps.telemetry,
      (code) => {
        this.events.emit('script.join', { jobId: job.id, code });
        options.onJoin?.(code);
      },
    );
    const r = request;
    this.rules = { preset: r.preset, repeat: r.repeat, maxTrials: r.maxTrials, allowRecipeChanges: r.allowRecipeChanges, lossTolerance: r.lossTolerance, confounders: r.confounders, objective: r.objective };
  }

  cancelled(): boolean {
    return this.job.cancelled;
  }

  closeToCancel(): boolean {
    return closedToCancel(this.job);
  }

  get finishedTrials(): number {
    return this.state.trials.length;
  }

  /** What the wizard measured so far, for the run of one that stopped early (no final). */
  record(status: OptimiseStatus = 'running'): ScriptOptimiseRecord {
    return { ...this.head(status, null), final: null };
  }

  /** The fields a finished and a stopped wizard share; `overrides` is what to run with, once the final is measured. */
  private head(status: OptimiseStatus, overrides: ScriptOverrides | null) {
    const r = this.request;
    const baseline = this.measured === null ? null : (({ overrides: _o, ...common }) => common)(this.measured);
    return {
      runId: this.run.id,
      runDir: this.run.relativeDir,
      jobId: this.job.id,
      status,
      title: commandText(r.target),
      preset: r.preset,
      repeat: r.repeat,
      objective: r.objective,
      baseline,
      diagnosis: this.measured === null ? null : scriptDiagnosis(this.measured),
      limits: null,
      trials: this.state.trials,
      skipped: this.state.skipped,
      seconds: (Date.now() - this.started) / 1000,
      target: {
        kind: 'script' as const,
        command: r.target,
        loader: this.loader,
        baseline: { overrides: r.overrides },
        final: overrides === null ? null : { overrides },
        lossCheck: {
          seed: r.seed,
          tolerance: r.lossTolerance,
          seededBy: this.target.seededBy?.by ?? null,
          where: this.target.seededBy?.where ?? null,
          unchecked: this.target.lossUnchecked(),
        },
      },
    };
  }

  /** A resumed wizard keeps the baseline and the trials it had; one stopped before its baseline starts over. */
  async prepare(): Promise<void> {
    const restored = this.resumed?.baseline ? { ...this.resumed, baseline: this.resumed.baseline } : null;
    if (!restored) return;
    const start = restored.target.baseline.overrides as ScriptOverrides;
    this.measured = { ...restored.baseline, overrides: start };
    this.loader = restored.target.loader;
    const { best, exhausted } = replayTrials(start, restored.trials);
    Object.assign(this.state, { best, exhausted: [...exhausted], trials: [...restored.trials] });
  }

  baseline() {
    const b = this.measured;
    return b ? { config: b.overrides as ScriptOverrides, samplesPerSec: b.samplesPerSec, noiseFloor: b.noiseFloor } : null;
  }

  start(): ScriptOverrides {
    return this.request.overrides;
  }

  async takeBaseline(reps: ScriptRepetition[], measures: BaselineMeasures<ScriptRepetition>): Promise<boolean> {
    this.measureBaseline(reps, measures);
    return false;
  }

  async afterBaseline(): Promise<void> {
    const baseline = this.measured!;
    this.target.knobs = { device: baseline.device, cpus: os.cpus().length, loader: this.loader, bound: scriptBound(baseline) };
    this.events.emit('script.optimiseBaseline', { jobId: this.job.id, runId: this.run.id, baseline, loader: this.loader, trials: [...this.state.trials] });
    await this.saveState();
  }

  async afterTrial(trial: OptimiseTrial): Promise<void> {
    this.run.appendEvent({ type: 'optimise.trial', trial });
    await this.saveState();
  }

  finalDone(): boolean {
    return this.finished;
  }

  async finish(final: FinalComparison<ScriptOverrides> | null, say: SayPhase): Promise<ScriptOptimiseResult> {
    try {
      const { config, ...rest } = final!;
      const result = { ...this.head('completed', config), final: rest };
      this.finished = true;
      say('done');
      const parsed = OptimiseResultSchema.safeParse(result);
      if (!parsed.success || !isScriptOptimise(parsed.data)) {
        throw new ApiError('E_INTERNAL', `the script optimisation result does not match the contract: ${parsed.success ? 'its target is not the script' : formatIssues(parsed.error, 'result')}`);
      }
      await this.run.finish('completed', { result: parsed.data });
      return parsed.data;
    } finally {
      this.release();
      this.target.close();
    }
  }

  async fail(err: unknown): Promise<Error> {
    try {
      const e = err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
      const n = this.finishedTrials;
      const kept = `${n} finished trial${n === 1 ? '' : 's'}`;
      const resume = `go on with Resume in the Optimise area, or trainbench optimise --resume ${this.run.id}`;
      const stopped =
        e.code === 'E_CANCELLED' ? new ApiError('E_CANCELLED', `the script optimisation was cancelled after ${kept}; its run ${this.run.relativeDir} keeps what it measured (${e.message}); ${resume}`) : e;
      const status = e.code === 'E_CANCELLED' ? 'cancelled' : 'failed';
      await this.run.finish(status, { result: this.record(status), error: stopped.toPayload() });
      return stopped;
    } finally {
      this.release();
      this.target.close();
    }
  }

  /** The baseline from its launches: the samples every trial's gain is judged against. */
  private measureBaseline(base: ScriptRepetition[], measures: BaselineMeasures<ScriptRepetition>): void {
    const samples = base.map((m) => m.samplesPerSec);
    this.loader = base[0].loader;
    const meanOf = (pick: (m: ScriptRepetition) => number) => base.reduce((s, m) => s + pick(m), 0) / base.length;
    const phasesMs = { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0, other: 0 };
    for (const key of Object.keys(phasesMs) as (keyof typeof phasesMs)[]) phasesMs[key] = meanOf((m) => m.phasesMs[key]);
    const perJoule = measures.perJoule(base);
    this.measured = {
      overrides: this.request.overrides,
      samplesPerSec: medianInterval(samples),
      repetitions: samples,
      // The trials are judged against the noise of what the objective compares (samples/s or samples/J).
      noiseFloor: measures.noise(base),
      stepMs: meanOf((m) => m.stepMs),
      phasesMs,
      phasesPercent: phaseShares(phasesMs),
      device: base[0].device,
      ...(perJoule ? { samplesPerJoule: medianInterval(perJoule) } : {}),
      ...baselineCollectives(base),
    };
  }

  /** After the baseline and every trial: a killed wizard loses only the trial in flight (see resumeFrom). */
  private saveState(): Promise<void> {
    return saveScriptWizardState(this.run, this.record());
  }

  progress(p: LoopProgress): void {
    const full: OptimiseProgress = { jobId: this.job.id, target: 'script', runId: this.run.id, maxTrials: this.request.maxTrials, elapsedSeconds: (Date.now() - this.started) / 1000, ...p };
    this.events.emit('optimise.progress', full);
    this.options.onProgress?.(full);
  }
}

/** A job of several ranks: the baseline launch with the median exposed communication speaks for it (its straggler too). */
function baselineCollectives(base: readonly ScriptRepetition[]): { collectives?: NonNullable<ScriptRepetition['collectives']> } {
  const timed = base.flatMap((m) => (m.collectives ? [m.collectives] : [])).sort((a, b) => a.exposedShare - b.exposedShare);
  return timed.length ? { collectives: timed[Math.floor(timed.length / 2)] } : {};
}
