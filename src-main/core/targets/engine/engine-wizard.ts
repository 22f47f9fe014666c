import os from 'node:os';

import type { BatchSearchRequestInput, BatchSearchResult } from '../../../api/batch-size';
import { DEFAULT_HEADROOM } from '../../../api/batch-size';
import { partId } from '../../../api/ids';
import { ApiError } from '../../../api/errors';
import { formatIssues } from '../../../api/format-issues';
import type { OptimiseBaseline, OptimiseConfig, OptimiseProgress, OptimiseRequest, OptimiseTrial, StepsWidened, WizardState } from '../../../api/optimise';
import type { EngineOptimiseResult } from '../../../api/optimise-result';
import { OptimiseResultSchema, isEngineOptimise } from '../../../api/optimise-result';
import { recordsPerEpoch } from '../../../api/training';
import type { EngineClient } from '../../../engine/engine-client';
import type { EngineBenchmarks, PreparedBenchmark } from './engine-benchmark';
import { aggregateRepetitions } from '../../stats/benchmark-summary';
import { describeComputeDevice } from '../../common/compute-device';
import type { EventHub } from '../../common/event-hub';
import type { KnobContext } from '../../knobs/knob';
import { readRun } from '../../workspace/run-file';
import { interruptionOf } from '../../workspace/run-reader';
import type { RunRecord } from '../../workspace/run-store';
import { createRun } from '../../workspace/run-store';
import { closedToCancel, type RunningJob } from '../../jobs/running-jobs';
import type { BaselineMeasures, FinalComparison, LoopProgress, SayPhase, WizardOptions, WizardRules, WizardSession } from '../target-runner';
import { WizardCancelled } from '../wizard-cancelled';
import { medianInterval } from '../../stats/medians';
import type { EngineRepetition } from './wizard-repetitions';
import { EngineRepetitions, engineBenchmarkRequest } from './wizard-repetitions';
import type { Workspace } from '../../workspace/workspace';
import { diagnose } from '../../knobs/diagnosis';
import { measureLimits } from './measure-limits';
import { PRESETS } from '../../knobs/presets';
import { cancelledMessage, initialState } from './resumable-run';
import { meanLoss } from '../../stats/benchmark-summary';
import { loadWizardState, saveWizardState } from '../wizard-state';

type OptimiseRunOptions = WizardOptions;

/** The batch-size search capability, handed in by the services (a runner does not import a capability). */
export type SearchBatch = (request: BatchSearchRequestInput & { jobId: string }, options: { allowPathsOutsideWorkspace?: boolean }) => Promise<BatchSearchResult>;

/** What the engine's wizard needs of the workbench. */
export interface EngineWizardDeps {
  engine: EngineClient;
  events: EventHub;
  workspace: Workspace;
  benchmarks: EngineBenchmarks;
  searchBatch: SearchBatch;
  /** Cancels a job of this workbench by its id (the wizard's own batch search). */
  cancelJob: (jobId: string) => Promise<unknown>;
}

interface Job {
  /** The wizard's job: set cancelled by jobs.cancel. */
  run: RunningJob;
  /** What the repetitions set and clear their engine run's cancel on (the wizard's own cancel calls it). */
  bench: RunningJob;
  /** The batch-size search in progress, so a cancel reaches it too. */
  searchId: string | null;
}

/**
 * The optimisation wizard on our engine: a baseline, a diagnosis and the physical limits, then coordinate
 * ascent over the knobs (core/optimise/wizard-loop.ts), one change at a time on top of the current best, each
 * measured A/B/A/B and kept only when its speedup beats the noise. The state is saved after every step
 * (optimise/<job id>/state.json), so a killed app resumes it. A cancel (jobs.cancel) stops the wizard at once:
 * the trial in progress is dropped (resume runs it again); everything before it stays saved.
 */
export class EngineWizards {
  constructor(private readonly deps: EngineWizardDeps) {}

  private get workspace(): Workspace {
    return this.deps.workspace;
  }

  /** A new wizard under the job's id (OptimiseService refused an id either target's wizard has). */
  async start(request: OptimiseRequest & { jobId: string }, job: RunningJob, options: OptimiseRunOptions = {}): Promise<WizardSession<OptimiseConfig, EngineRepetition>> {
    const state = initialState(request.jobId, request);
    await saveWizardState(this.workspace, state);
    return this.session(state, job, options);
  }

  /** Continues a cancelled or interrupted wizard from its saved state; a finished one answers with its result. */
  async resume(jobId: string, job: RunningJob, options: OptimiseRunOptions = {}): Promise<WizardSession<OptimiseConfig, EngineRepetition> | EngineOptimiseResult> {
    const state = await loadWizardState(this.workspace, jobId);
    await this.refuseIfLiveElsewhere(state);
    if (state.status === 'completed') return this.result(state, await this.titleOf(state, options), state.runIds[state.runIds.length - 1] ?? '');
    return this.session({ ...state, status: 'running', message: null }, job, options);
  }

  /** The saved state of the engine wizard of this id; undefined when there is none. */
  async saved(jobId: string): Promise<WizardState | undefined> {
    try {
      return await loadWizardState(this.workspace, jobId);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'E_BAD_INPUT' && /^no optimisation/.test(err.message)) return undefined;
      throw err;
    }
  }

  /** Two processes driving one wizard would overwrite each other's state: the last run must be finished or its process gone. */
  private async refuseIfLiveElsewhere(state: WizardState): Promise<void> {
    const last = state.runIds[state.runIds.length - 1];
    if (!last || state.status !== 'running') return;
    // The id comes from state.json: WizardStateSchema re-validated it as an id, so it names a folder of runs/.
    const parsed = await readRun(this.workspace, last);
    if (!parsed.record || parsed.record.status !== 'running' || interruptionOf(parsed.record) !== null) return;
    const owner = parsed.record.owner;
    throw new ApiError(
      'E_BAD_INPUT',
      `optimisation ${state.jobId} is still running${owner ? ` in process ${owner.pid} on ${owner.host}` : ''} (run ${last}): cancel it there, or wait until it stops, before resuming`,
    );
  }

  /** The wizard's session from its saved state: a new run recorded, the samplers held, the cancel wired. */
  private async session(state: WizardState, running: RunningJob, options: OptimiseRunOptions): Promise<WizardSession<OptimiseConfig, EngineRepetition>> {
    const job: Job = { run: running, bench: { id: running.id, cancelled: false, cancel: null }, searchId: null };
    // A cancel stops the repetition in flight (its engine run) and the wizard's own batch search.
    running.cancel = async () => {
      job.bench.cancelled = true;
      await Promise.resolve(job.bench.cancel?.()).catch(() => undefined);
      if (job.searchId) await this.deps.cancelJob(job.searchId).catch(() => undefined);
    };
    let run: RunRecord;
    try {
      // spec at the top level, as other kinds store it, so the Runs list can name the model.
      run = await createRun(
        this.workspace,
        'optimise',
        {
          jobId: state.jobId,
          spec: state.request.target.spec,
          request: state.request,
          resumedFrom: state.runIds[state.runIds.length - 1] ?? null,
        },
        { computeDevice: describeComputeDevice(await this.deps.engine.devices(), state.request.target.options.device) },
      );
      state.runIds.push(run.id);
      await saveWizardState(this.workspace, state);
    } catch (err) {
      // Before its run exists a wizard can still fail (no engine, a full disk): its state says so, not "running".
      running.cancel = null;
      const failure = err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
      await saveWizardState(this.workspace, { ...state, status: 'failed', message: failure.message }).catch(() => undefined);
      throw failure;
    }
    const samplers = await this.deps.benchmarks.holdTelemetry();
    return new Session(this, state, run, job, options, () => {
      samplers.release();
      running.cancel = null;
    });
  }

  /** Parts a session needs (kept off the public surface). */
  get parts(): EngineWizardDeps {
    return this.deps;
  }

  async titleOf(state: WizardState, options: OptimiseRunOptions): Promise<string> {
    const prepared = await this.deps.benchmarks.prepare(engineBenchmarkRequest(state.request, state.best), { allowPathsOutsideWorkspace: options.allowPathsOutsideWorkspace, readFrom: state.best.readFrom });
    return `${state.request.target.spec.family} on ${prepared.data.description}`;
  }

  result(state: WizardState, title: string, runId: string): EngineOptimiseResult {
    const { config, cpuMean, gpuUtilizationMean, memoryBytes, deviceTotalBytes, meanLoss, ...baseline } = state.baseline ?? ({} as OptimiseBaseline);
    const { config: finalConfig, ...final } = state.final ?? ({} as NonNullable<WizardState['final']>);
    const parsed = OptimiseResultSchema.safeParse({
      jobId: state.jobId,
      runId,
      runDir: `runs/${runId}`,
      status: state.status,
      title,
      preset: state.request.preset,
      repeat: state.request.repeat,
      objective: state.request.objective,
      baseline,
      diagnosis: state.diagnosis,
      limits: state.limits,
      trials: state.trials,
      skipped: state.skipped,
      final,
      seconds: state.seconds,
      target: {
        kind: 'engine',
        baseline: { config, cpuMean, gpuUtilizationMean, memoryBytes, deviceTotalBytes, meanLoss },
        final: { config: finalConfig },
        batchSearch: state.batchSearch,
        stepsWidened: state.stepsWidened,
      },
    });
    if (!parsed.success || !isEngineOptimise(parsed.data)) throw new ApiError('E_INTERNAL', `the optimisation result does not match the contract: ${parsed.success ? 'no diagnosis or limits' : formatIssues(parsed.error, 'result')}`);
    return parsed.data;
  }
}

/** Most steps a widened repetition measures (the request's own bound). */
const MAX_STEPS = 100_000;

/**
 * The steps that make a repetition's measured window at least `minWindowSeconds` at the baseline's step
 * time, or null when `steps` already does (or no minimum was asked for).
 */
export function widenSteps(steps: number, stepMs: number, minWindowSeconds: number): StepsWidened | null {
  const windowMs = steps * stepMs;
  if (!(minWindowSeconds > 0) || !(stepMs > 0) || windowMs >= 1000 * minWindowSeconds) return null;
  const to = Math.min(MAX_STEPS, Math.ceil((1000 * minWindowSeconds) / stepMs));
  return to > steps ? { from: steps, to, windowMs, minWindowSeconds } : null;
}

/** One process's stretch of a wizard: from wherever the saved state stands to the end (or a cancel). */
class Session implements WizardSession<OptimiseConfig, EngineRepetition> {
  private readonly startedAt = Date.now();
  private readonly secondsBefore: number;
  readonly target: EngineRepetitions;
  readonly rules: WizardRules;
  private basePrepared: PreparedBenchmark | null = null;
  private title = '';

  constructor(
    private readonly service: EngineWizards,
    readonly state: WizardState,
    private readonly run: RunRecord,
    private readonly job: Job,
    private readonly options: OptimiseRunOptions,
    private readonly release: () => void,
  ) {
    this.secondsBefore = state.seconds;
    const r = state.request;
    this.target = new EngineRepetitions(service.parts.benchmarks, r, run, job.bench, options.allowPathsOutsideWorkspace);
    this.rules = { preset: r.preset, repeat: r.repeat, maxTrials: r.maxTrials, allowRecipeChanges: r.allowRecipeChanges, lossTolerance: r.lossTolerance, confounders: r.confounders, objective: r.objective };
  }

  cancelled(): boolean {
    return this.job.run.cancelled;
  }

  closeToCancel(): boolean {
    return closedToCancel(this.job.run);
  }

  async prepare(say: SayPhase): Promise<void> {
    const s = this.state;
    say('preparing');
    this.basePrepared = await this.target.prepare(s.baseline?.config ?? s.best);
    this.title = `${s.request.target.spec.family} on ${this.basePrepared.data.description}`;
  }

  baseline() {
    return this.state.baseline;
  }

  start(): OptimiseConfig {
    return this.state.best;
  }

  async takeBaseline(reps: EngineRepetition[], measures: BaselineMeasures<EngineRepetition>): Promise<boolean> {
    const s = this.state;
    const baseline = await this.measuredBaseline(s.best, this.basePrepared!, reps, measures);
    const widened = s.stepsWidened ? null : widenSteps(s.request.steps, baseline.stepMs, s.request.minWindowSeconds);
    if (widened) {
      // Every later repetition measures the wider window, so the short baseline cannot stand beside them.
      s.stepsWidened = widened;
      s.request.steps = widened.to;
      this.target.forgetPrepared();
      this.basePrepared = await this.target.prepare(s.best);
      return true;
    }
    s.baseline = baseline;
    s.diagnosis = diagnose(s.baseline, s.request.steps);
    await this.save();
    return false;
  }

  async afterBaseline(say: SayPhase): Promise<void> {
    const s = this.state;
    const basePrepared = this.basePrepared!;
    const baseline = s.baseline!;
    const drawnPerEpoch = recordsPerEpoch(basePrepared.manifest.records, basePrepared.options.sampleRatio);
    const ctx: KnobContext = { device: baseline.device, cpus: os.cpus().length, recordsPerEpoch: drawnPerEpoch };
    this.target.knobs = { diagnosis: s.diagnosis ?? diagnose(baseline, s.request.steps), ctx };
    if (!s.limits) {
      say('limits');
      s.limits = await measureLimits(this.service.parts.engine, s.request.target.spec, baseline.config, basePrepared, baseline.stepMs, baseline.device);
      await this.save();
    }
    if (!s.batchSearch) {
      s.batchSearch = await this.searchBatch(basePrepared, say);
      await this.save();
    }
    ctx.searchedBatch = s.batchSearch.recommended;
  }

  async afterTrial(trial: OptimiseTrial): Promise<void> {
    this.run.appendEvent({ type: 'optimise.trial', trial });
    await this.save();
  }

  finalDone(): boolean {
    return !!this.state.final;
  }

  async finish(final: FinalComparison<OptimiseConfig> | null, say: SayPhase): Promise<EngineOptimiseResult> {
    const s = this.state;
    try {
      if (final) {
        s.final = final;
        await this.save();
      }
      s.status = 'completed';
      s.seconds = this.seconds();
      await this.save();
      say('done');
      const result = this.service.result(s, this.title, this.run.id);
      await this.run.finish('completed', { result });
      return result;
    } finally {
      this.release();
    }
  }

  async fail(err: unknown): Promise<Error> {
    const s = this.state;
    const cancelled = err instanceof WizardCancelled || (err instanceof ApiError && err.code === 'E_CANCELLED' && this.job.run.cancelled);
    const failure = cancelled ? new ApiError('E_CANCELLED', cancelledMessage(s)) : err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
    try {
      // A state that cannot be saved (the same full disk, a state.json made immutable) must not keep the run from
      // ending: its heartbeat would say "running" for as long as the process lives.
      await saveWizardState(this.service.parts.workspace, { ...s, status: cancelled ? 'cancelled' : 'failed', message: failure.message }).catch(() => undefined);
      return await this.run.fail(failure);
    } finally {
      this.release();
    }
  }

  /**
   * The batch-size candidate from the batch-size search (its own run of kind batch-search), where
   * there is memory to search and the preset may change the recipe; otherwise why not.
   */
  private async searchBatch(prepared: PreparedBenchmark, say: SayPhase): Promise<NonNullable<WizardState['batchSearch']>> {
    const s = this.state;
    const o = prepared.options;
    // Why not, said once: the pages and the CLI add that the candidate is then twice the batch.
    const none = (verdict: string) => ({ recommended: null, runId: null, verdict });
    if (!s.request.batchSearch) return none('not run: it was not asked for');
    if (PRESETS[s.request.preset].refuses({ knob: 'batchSize', from: 0, to: 0, kind: 'recipe', label: 'batch size', hypothesis: '', note: null })) {
      return none(`not run: the ${s.request.preset} preset keeps the batch size`);
    }
    if (!s.baseline?.device.startsWith('cuda') && o.memoryLimitBytes <= 0) {
      return none('not run: the CPU has no device memory to search without a memory limit');
    }
    say('batch-search', 'searching the batch size');
    if (this.job.run.cancelled) throw new WizardCancelled('cancelled before the batch-size search');
    this.job.searchId = partId(this.run.id, 'batch-search');
    try {
      const r = await this.service.parts.searchBatch(
        { spec: s.request.target.spec, data: s.request.target.data, options: o, headroom: DEFAULT_HEADROOM, stepsPerTrial: 5, jobId: this.job.searchId },
        { allowPathsOutsideWorkspace: this.options.allowPathsOutsideWorkspace },
      );
      return { recommended: r.recommended, runId: r.runId, verdict: r.verdict };
    } catch (err) {
      if (this.job.run.cancelled) throw new WizardCancelled('cancelled during the batch-size search');
      return none(`the batch-size search failed: ${(err as Error).message}; the batch-size candidate is twice the batch`);
    } finally {
      this.job.searchId = null;
    }
  }

  private seconds(): number {
    return this.secondsBefore + (Date.now() - this.startedAt) / 1000;
  }

  private async save(): Promise<void> {
    this.state.seconds = this.seconds();
    await saveWizardState(this.service.parts.workspace, this.state);
  }

  private async measuredBaseline(config: OptimiseConfig, prepared: PreparedBenchmark, measuredReps: EngineRepetition[], measures: BaselineMeasures<EngineRepetition>): Promise<OptimiseBaseline> {
    const reps = measuredReps.map((r) => r.measured);
    const samples = reps.map((r) => r.repetition.samplesPerSec);
    const perJoule = measures.perJoule(measuredReps);
    const aggregate = aggregateRepetitions(
      reps.map((r) => r.repetition),
      prepared.stepsPerEpoch,
    );
    const last = reps[reps.length - 1].repetition;
    const losses = reps.map((r) => meanLoss(r.steps)).filter((x): x is number => x !== null);
    return {
      config,
      samplesPerSec: aggregate.samplesPerSecCi,
      repetitions: samples,
      // The trials are judged against the noise of what the objective compares (samples/s or samples/J).
      noiseFloor: measures.noise(measuredReps),
      ...(perJoule ? { samplesPerJoule: medianInterval(perJoule) } : {}),
      stepMs: aggregate.steadyStateMeanMs,
      phasesMs: aggregate.phasesMs,
      phasesPercent: aggregate.phasesPercent,
      device: last.target.memory.device,
      cpuMean: aggregate.telemetry.cpuMean,
      gpuUtilizationMean: aggregate.telemetry.gpuUtilizationMean,
      memoryBytes: last.target.memory.measured.total,
      deviceTotalBytes: await this.service.parts.benchmarks.deviceMemory(last.target.memory.device),
      meanLoss: losses.length ? medianInterval(losses).median : null,
    };
  }

  progress(p: LoopProgress): void {
    const s = this.state;
    const full: OptimiseProgress = { jobId: s.jobId, target: 'engine', runId: this.run.id, maxTrials: s.request.maxTrials, elapsedSeconds: this.seconds(), ...p };
    this.service.parts.events.emit('optimise.progress', full);
    this.options.onProgress?.(full);
  }
}
