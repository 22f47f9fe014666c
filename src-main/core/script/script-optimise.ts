import os from 'node:os';

import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import type { OptimiseProgress } from '../../api/optimise';
import type { ScriptLoaderSettings, ScriptOptimiseRecord, ScriptOptimiseRequest, ScriptOptimiseResult, ScriptOverrides } from '../../api/script-target';
import { ScriptOptimiseResultSchema } from '../../api/script-target';
import { phaseShares } from '../benchmarks/benchmark-summary';
import type { EventHub } from '../event-hub';
import type { LoopProgress, SearchState } from '../optimise/wizard-loop';
import { WizardLoop } from '../optimise/wizard-loop';
import type { RunRecord } from '../run-store';
import { createRun } from '../run-store';
import { medianInterval } from '../stats/bootstrap';
import type { ScriptRepetition } from '../targets/script-runner';
import { LAUNCH_TELEMETRY_MS, ScriptRunner } from '../targets/script-runner';
import { TelemetryService } from '../telemetry/telemetry-service';
import { scriptBound } from '../knobs/script-bound';
import type { Workspace } from '../workspace';
import { commandText } from './script-benchmark';
import type { ScriptJob } from './script-jobs';
import { ScriptJobs } from './script-jobs';
import { loadScriptWizardState, replayTrials, saveScriptWizardState } from './script-optimise-resume';

export interface ScriptOptimiseOptions {
  onProgress?: (p: OptimiseProgress) => void;
  /** Each line the script writes, with the launch (1-based, over the whole wizard) that wrote it. */
  onOutput?: (stream: 'stdout' | 'stderr', line: string, launch: number) => void;
  /** The registry the wizard's job joins, so `script.cancel` (or the CLI's Ctrl-C) stops it; a private one when absent. */
  jobs?: ScriptJobs;
  /** Watches each launch for what else the machine did (confounders); a private one when absent. */
  telemetry?: TelemetryService;
}

type Baseline = ScriptOptimiseResult['baseline'];

/**
 * The optimisation wizard (core/optimise/wizard-loop.ts, the engine's too) on a user's command
 * (core/targets/script-runner.ts): a baseline of `repeat` launches, then one override at a time on
 * top of the current best, measured A/B/A/B. Every launch is seeded alike and its mean loss compared
 * (the preset's tolerance), unless the script's loss does not reproduce: then a kept change says it was
 * kept without a loss check. The batch size is a recipe change: proposed, kept only when allowed.
 *
 * The wizard is one script job: cancelling it kills the launch in flight; the
 * run is recorded cancelled (or failed) with what it had measured, so the
 * finished trials of a stopped wizard are not lost (ScriptOptimiseRecord).
 */
export async function optimiseScript(workspace: Workspace, events: EventHub, request: ScriptOptimiseRequest, options: ScriptOptimiseOptions = {}): Promise<ScriptOptimiseResult> {
  const started = Date.now();
  const jobs = options.jobs ?? new ScriptJobs();
  const job = jobs.open(request.jobId, 'script optimisation');
  const telemetry = options.telemetry ?? new TelemetryService(events);
  // Held across the launches: nvidia-smi starts once, not inside each launch's measured steps.
  const held = await telemetry.hold(LAUNCH_TELEMETRY_MS);
  try {
    // Checked before a run is created: a refused resume records nothing.
    const resumed = request.resumeFrom ? await loadScriptWizardState(workspace, request.resumeFrom, request) : null;
    const run = await createRun(workspace, 'optimise', { target: request.target, request, jobId: job.id });
    const wizard = new ScriptWizard(request, run, events, options, started, jobs, job, resumed, telemetry);
    try {
      const result = await wizard.go();
      await run.finish('completed', { result });
      return result;
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
      const n = wizard.finishedTrials;
      const kept = `${n} finished trial${n === 1 ? '' : 's'}`;
      const resume = `go on with trainbench optimise --resume ${run.id}`;
      const stopped =
        e.code === 'E_CANCELLED' ? new ApiError('E_CANCELLED', `the script optimisation was cancelled after ${kept}; its run ${run.relativeDir} keeps what it measured (${e.message}); ${resume}`) : e;
      await run.finish(e.code === 'E_CANCELLED' ? 'cancelled' : 'failed', { result: wizard.record(), error: stopped.toPayload() });
      throw stopped;
    }
  } finally {
    held.release();
    if (!options.telemetry) await telemetry.dispose();
    jobs.close(job);
  }
}

class ScriptWizard {
  private readonly runner: ScriptRunner;
  private readonly loop: WizardLoop<ScriptOverrides, ScriptRepetition>;
  private baseline: Baseline | null = null;
  private loader: ScriptLoaderSettings | null = null;
  private readonly state: SearchState<ScriptOverrides>;

  constructor(
    private readonly request: ScriptOptimiseRequest,
    private readonly run: RunRecord,
    private readonly events: EventHub,
    private readonly options: ScriptOptimiseOptions,
    private readonly started: number,
    jobs: ScriptJobs,
    private readonly job: ScriptJob,
    /** What the run this one resumes had measured; null for a fresh wizard. */
    private readonly resumed: ScriptOptimiseRecord | null,
    telemetry: TelemetryService,
  ) {
    this.state = { best: request.overrides, trials: [], exhausted: [], skipped: [] };
    this.runner = new ScriptRunner(
      request,
      run,
      jobs,
      job,
      (stream, line, launch) => {
        this.events.emit('script.output', { jobId: job.id, runId: run.id, repetition: launch, stream, line });
        this.options.onOutput?.(stream, line, launch);
      },
      telemetry,
    );
    const r = request;
    this.loop = new WizardLoop(
      this.runner,
      { preset: r.preset, repeat: r.repeat, maxTrials: r.maxTrials, allowRecipeChanges: r.allowRecipeChanges, lossTolerance: r.lossTolerance, confounders: r.confounders, objective: r.objective },
      {
        cancelled: () => job.cancelled,
        progress: (p) => this.emit(p),
        afterTrial: async (trial) => {
          this.run.appendEvent({ type: 'optimise.trial', trial });
          await this.saveState();
        },
      },
    );
  }

  get finishedTrials(): number {
    return this.state.trials.length;
  }

  /** What the wizard measured so far, for the run of one that stopped early (no final). */
  record(): ScriptOptimiseRecord {
    return { ...this.head(), final: null };
  }

  /** The fields a finished and a stopped wizard share. */
  private head() {
    const r = this.request;
    return {
      runId: this.run.id,
      runDir: this.run.relativeDir,
      title: commandText(r.target),
      target: r.target,
      preset: r.preset,
      repeat: r.repeat,
      objective: r.objective,
      loader: this.loader,
      baseline: this.baseline,
      lossCheck: {
        seed: r.seed,
        tolerance: r.lossTolerance,
        seededBy: this.runner.seededBy?.by ?? null,
        where: this.runner.seededBy?.where ?? null,
        unchecked: this.runner.lossUnchecked(),
      },
      trials: this.state.trials,
      skipped: this.state.skipped,
      seconds: (Date.now() - this.started) / 1000,
    };
  }

  async go(): Promise<ScriptOptimiseResult> {
    const r = this.request;
    // A resumed wizard keeps the baseline and the trials it had; one stopped before its baseline starts over.
    const restored = this.resumed?.baseline ? { ...this.resumed, baseline: this.resumed.baseline } : null;
    if (restored) {
      this.baseline = restored.baseline;
      this.loader = restored.loader;
      const { best, exhausted } = replayTrials(restored.baseline.overrides as ScriptOverrides, restored.trials);
      Object.assign(this.state, { best, exhausted: [...exhausted], trials: [...restored.trials] });
    } else {
      this.measureBaseline(await this.loop.baseline(r.overrides));
    }
    const baseline = this.baseline!;
    this.runner.knobs = { device: baseline.device, cpus: os.cpus().length, loader: this.loader, bound: scriptBound(baseline) };
    this.loop.current = this.state;
    this.events.emit('script.optimiseBaseline', { jobId: this.job.id, runId: this.run.id, baseline, loader: this.loader, trials: [...this.state.trials] });
    await this.saveState();

    await this.loop.search(this.state, baseline.noiseFloor);
    const f = await this.loop.final(baseline.overrides as ScriptOverrides, this.state, baseline);
    const { config, ...rest } = f;
    const result = { ...this.head(), final: { overrides: config, ...rest } };
    this.loop.progress('done', null, 0, 0, null, null, true);
    const parsed = ScriptOptimiseResultSchema.safeParse(result);
    if (!parsed.success) throw new ApiError('E_INTERNAL', `the script optimisation result does not match the contract: ${formatIssues(parsed.error, 'result')}`);
    return parsed.data;
  }

  /** The baseline from its launches: the samples every trial's gain is judged against. */
  private measureBaseline(base: ScriptRepetition[]): void {
    const samples = base.map((m) => m.samplesPerSec);
    this.loader = base[0].loader;
    const meanOf = (pick: (m: ScriptRepetition) => number) => base.reduce((s, m) => s + pick(m), 0) / base.length;
    const phasesMs = { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0, other: 0 };
    for (const key of Object.keys(phasesMs) as (keyof typeof phasesMs)[]) phasesMs[key] = meanOf((m) => m.phasesMs[key]);
    this.baseline = {
      overrides: this.request.overrides,
      samplesPerSec: medianInterval(samples),
      repetitions: samples,
      // The trials are judged against the noise of what the objective compares (samples/s or samples/J).
      noiseFloor: this.loop.baselineNoise(base),
      stepMs: meanOf((m) => m.stepMs),
      phasesMs,
      phasesPercent: phaseShares(phasesMs),
      device: base[0].device,
      ...(WizardLoop.perJoule(base) ? { samplesPerJoule: medianInterval(WizardLoop.perJoule(base)!) } : {}),
    };
  }

  /** After the baseline and every trial: a killed wizard loses only the trial in flight (see resumeFrom). */
  private saveState(): Promise<void> {
    return saveScriptWizardState(this.run, this.record());
  }

  private emit(p: LoopProgress): void {
    const full: OptimiseProgress = { optimiseId: this.job.id, target: 'script', runId: this.run.id, maxTrials: this.request.maxTrials, elapsedSeconds: (Date.now() - this.started) / 1000, ...p };
    this.events.emit('optimise.progress', full);
    this.options.onProgress?.(full);
  }
}
