import os from 'node:os';

import { DEFAULT_HEADROOM } from '../../api/batch-size';
import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import type { OptimiseBaseline, OptimiseConfig, OptimiseProgress, OptimiseRequest, OptimiseResult, StepsWidened, WizardState } from '../../api/optimise';
import { OptimiseResultSchema } from '../../api/optimise';
import { recordsPerEpoch } from '../../api/training';
import type { EngineClient } from '../../engine/engine-client';
import type { BatchSizeService } from '../batch-size/batch-size-service';
import type { ActiveJob, PreparedBenchmark, TrainingBenchmarkService } from '../benchmarks/training-benchmark';
import { aggregateRepetitions } from '../benchmarks/benchmark-summary';
import { describeComputeDevice } from '../compute-device';
import type { EventHub } from '../event-hub';
import type { KnobContext } from '../knobs/knob';
import { interruptionOf, readRun } from '../run-reader';
import type { RunRecord } from '../run-store';
import { createRun, newRunId } from '../run-store';
import { medianInterval } from '../stats/bootstrap';
import type { EngineRepetition } from '../targets/engine-runner';
import { EngineRunner, engineBenchmarkRequest } from '../targets/engine-runner';
import type { Workspace } from '../workspace';
import { diagnose } from './diagnosis';
import { measureLimits } from './measure-limits';
import { PRESETS } from './presets';
import { cancelledMessage, initialState } from './resumable-run';
import { meanLoss } from './trial-decision';
import type { LoopProgress } from './wizard-loop';
import { WizardCancelled, WizardLoop } from './wizard-loop';
import { loadWizardState, saveWizardState } from './wizard-state';

export interface OptimiseRunOptions {
  onProgress?: (progress: OptimiseProgress) => void;
  /** As for training: the CLI may read data from anywhere, UI requests stay inside the workspace. */
  allowPathsOutsideWorkspace?: boolean;
}

interface Job {
  cancelled: boolean;
  bench: ActiveJob;
  /** The batch-size search in progress, so a cancel reaches it too. */
  searchId: string | null;
}

/**
 * The optimisation wizard: a baseline, a diagnosis and the physical limits,
 * then coordinate ascent over the knobs, one change at a time on top of the
 * current best, each measured A/B/A/B and kept only when its speedup beats the
 * noise. The state is saved after every step, so a killed app resumes it.
 */
export class OptimiseService {
  private readonly active = new Map<string, Job>();

  constructor(
    private readonly engine: EngineClient,
    private readonly events: EventHub,
    private readonly workspace: Workspace,
    private readonly benchmarks: TrainingBenchmarkService,
    private readonly batchSize: BatchSizeService,
  ) {}

  async start(request: OptimiseRequest, options: OptimiseRunOptions = {}): Promise<OptimiseResult> {
    const optimiseId = request.optimiseId ?? `optimise-${newRunId()}`;
    const exists = await loadWizardState(this.workspace, optimiseId).then(
      () => true,
      () => false,
    );
    if (exists || this.active.has(optimiseId)) throw new ApiError('E_BAD_INPUT', `an optimisation with the id ${optimiseId} exists already: resume it, or choose another id`);
    const state = initialState(optimiseId, { ...request, optimiseId });
    await saveWizardState(this.workspace, state);
    return this.drive(state, options);
  }

  /** Continues a cancelled or interrupted wizard from its saved state; a finished one answers with its result. */
  async resume(optimiseId: string, options: OptimiseRunOptions = {}): Promise<OptimiseResult> {
    if (this.active.has(optimiseId)) throw new ApiError('E_BAD_INPUT', `optimisation ${optimiseId} is running in this process already`);
    const state = await loadWizardState(this.workspace, optimiseId);
    await this.refuseIfLiveElsewhere(state);
    if (state.status === 'completed') return this.result(state, await this.titleOf(state, options), state.runIds[state.runIds.length - 1] ?? '');
    return this.drive({ ...state, status: 'running', message: null }, options);
  }

  /** Stops the wizard at once: the trial in progress is dropped (resume runs it again); everything before it stays saved. */
  async cancel(optimiseId: string): Promise<{ cancelled: boolean }> {
    const job = this.active.get(optimiseId);
    if (!job) return { cancelled: false };
    job.cancelled = true;
    job.bench.cancelled = true;
    if (job.bench.engineRunId) await this.engine.cancelTraining(job.bench.engineRunId).catch(() => undefined);
    if (job.searchId) await this.batchSize.cancel(job.searchId).catch(() => undefined);
    return { cancelled: true };
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
      `optimisation ${state.optimiseId} is still running${owner ? ` in process ${owner.pid} on ${owner.host}` : ''} (run ${last}): cancel it there, or wait until it stops, before resuming`,
    );
  }

  state(optimiseId: string): Promise<WizardState> {
    return loadWizardState(this.workspace, optimiseId);
  }

  private async drive(state: WizardState, options: OptimiseRunOptions): Promise<OptimiseResult> {
    const job: Job = { cancelled: false, bench: { cancelled: false, engineRunId: null }, searchId: null };
    this.active.set(state.optimiseId, job);
    try {
      // spec at the top level, as other kinds store it, so the Runs list can name the model.
      const run = await createRun(
        this.workspace,
        'optimise',
        {
          optimiseId: state.optimiseId,
          spec: state.request.target.spec,
          request: state.request,
          resumedFrom: state.runIds[state.runIds.length - 1] ?? null,
        },
        { computeDevice: describeComputeDevice(await this.engine.devices(), state.request.target.options.device) },
      );
      state.runIds.push(run.id);
      await saveWizardState(this.workspace, state);
      const samplers = await this.benchmarks.holdTelemetry();
      try {
        const session = new Session(this, state, run, job, options);
        const result = await session.go();
        await run.finish('completed', { result });
        return result;
      } catch (err) {
        if (err instanceof WizardCancelled || (err instanceof ApiError && err.code === 'E_CANCELLED' && job.cancelled)) {
          const message = cancelledMessage(state);
          await saveWizardState(this.workspace, { ...state, status: 'cancelled', message });
          throw await run.fail(new ApiError('E_CANCELLED', message));
        }
        const failure = err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
        await saveWizardState(this.workspace, { ...state, status: 'failed', message: failure.message });
        throw await run.fail(failure);
      } finally {
        samplers.release();
      }
    } finally {
      this.active.delete(state.optimiseId);
    }
  }

  /** Parts a session needs from the service (kept off the public surface). */
  get parts() {
    return { engine: this.engine, events: this.events, workspace: this.workspace, benchmarks: this.benchmarks, batchSize: this.batchSize };
  }

  async titleOf(state: WizardState, options: OptimiseRunOptions): Promise<string> {
    const prepared = await this.benchmarks.prepare(engineBenchmarkRequest(state.request, state.best), { allowPathsOutsideWorkspace: options.allowPathsOutsideWorkspace, readFrom: state.best.readFrom });
    return `${state.request.target.spec.family} on ${prepared.data.description}`;
  }

  result(state: WizardState, title: string, runId: string): OptimiseResult {
    const parsed = OptimiseResultSchema.safeParse({
      optimiseId: state.optimiseId,
      runId,
      runDir: `runs/${runId}`,
      status: state.status,
      title,
      preset: state.request.preset,
      repeat: state.request.repeat,
      objective: state.request.objective,
      baseline: state.baseline,
      diagnosis: state.diagnosis,
      limits: state.limits,
      trials: state.trials,
      skipped: state.skipped,
      batchSearch: state.batchSearch,
      final: state.final,
      seconds: state.seconds,
      stepsWidened: state.stepsWidened,
    });
    if (!parsed.success) throw new ApiError('E_INTERNAL', `the optimisation result does not match the contract: ${formatIssues(parsed.error, 'result')}`);
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
class Session {
  private readonly startedAt = Date.now();
  private readonly secondsBefore: number;
  private readonly runner: EngineRunner;
  private readonly loop: WizardLoop<OptimiseConfig, EngineRepetition>;

  constructor(
    private readonly service: OptimiseService,
    private readonly state: WizardState,
    private readonly run: RunRecord,
    private readonly job: Job,
    private readonly options: OptimiseRunOptions,
  ) {
    this.secondsBefore = state.seconds;
    const r = state.request;
    this.runner = new EngineRunner(service.parts.benchmarks, r, run, job.bench, options.allowPathsOutsideWorkspace);
    this.loop = new WizardLoop(
      this.runner,
      { preset: r.preset, repeat: r.repeat, maxTrials: r.maxTrials, allowRecipeChanges: r.allowRecipeChanges, lossTolerance: r.lossTolerance, confounders: r.confounders, objective: r.objective },
      {
        cancelled: () => job.cancelled,
        progress: (p) => this.emit(p),
        afterTrial: async (trial) => {
          this.run.appendEvent({ type: 'optimise.trial', trial });
          await this.save();
        },
      },
    );
  }

  async go(): Promise<OptimiseResult> {
    const s = this.state;
    this.progress('preparing');
    let basePrepared = await this.runner.prepare(s.baseline?.config ?? s.best);
    const title = `${s.request.target.spec.family} on ${basePrepared.data.description}`;
    const drawnPerEpoch = recordsPerEpoch(basePrepared.manifest.records, basePrepared.options.sampleRatio);

    if (!s.baseline) {
      let reps = await this.loop.baseline(s.best);
      let baseline = await this.baseline(s.best, basePrepared, reps);
      const widened = widenSteps(s.request.steps, baseline.stepMs, s.request.minWindowSeconds);
      if (widened) {
        // Every later repetition measures the wider window, so the short baseline cannot stand beside them.
        s.stepsWidened = widened;
        s.request.steps = widened.to;
        this.runner.forgetPrepared();
        basePrepared = await this.runner.prepare(s.best);
        reps = await this.loop.baseline(s.best);
        baseline = await this.baseline(s.best, basePrepared, reps);
      }
      s.baseline = baseline;
      s.diagnosis = diagnose(s.baseline, s.request.steps);
      await this.save();
    }
    const ctx: KnobContext = { device: s.baseline.device, cpus: os.cpus().length, recordsPerEpoch: drawnPerEpoch };
    this.runner.knobs = { diagnosis: s.diagnosis ?? diagnose(s.baseline, s.request.steps), ctx };
    this.loop.current = s;
    if (!s.limits) {
      this.progress('limits');
      s.limits = await measureLimits(this.service.parts.engine, s.request.target.spec, s.baseline.config, basePrepared, s.baseline.stepMs, s.baseline.device);
      await this.save();
    }

    if (!s.batchSearch) {
      s.batchSearch = await this.searchBatch(basePrepared);
      await this.save();
    }
    ctx.searchedBatch = s.batchSearch.recommended;

    await this.loop.search(s, s.baseline.noiseFloor);
    if (!s.final) {
      s.final = await this.loop.final(s.baseline.config, s, s.baseline);
      await this.save();
    }
    s.status = 'completed';
    s.seconds = this.seconds();
    await this.save();
    this.progress('done');
    return this.service.result(s, title, this.run.id);
  }

  /**
   * The batch-size candidate from the batch-size search (its own run of kind batch-search), where
   * there is memory to search and the preset may change the recipe; otherwise why not.
   */
  private async searchBatch(prepared: PreparedBenchmark): Promise<NonNullable<WizardState['batchSearch']>> {
    const s = this.state;
    const o = prepared.options;
    const none = (verdict: string) => ({ recommended: null, runId: null, verdict });
    if (!s.request.batchSearch) return none('not run (batchSearch off): the batch-size candidate is twice the batch');
    if (PRESETS[s.request.preset].refuses({ knob: 'batchSize', from: 0, to: 0, kind: 'recipe', label: 'batch size', hypothesis: '', note: null })) {
      return none(`not run: the ${s.request.preset} preset keeps the batch size`);
    }
    if (!s.baseline?.device.startsWith('cuda') && o.memoryLimitBytes <= 0) {
      return none('not run: the CPU has no device memory to search without a memory limit; the batch-size candidate is twice the batch');
    }
    this.progress('batch-search', 'searching the batch size');
    if (this.job.cancelled) throw new WizardCancelled('cancelled before the batch-size search');
    this.job.searchId = `${this.run.id}-batch-search`;
    try {
      const r = await this.service.parts.batchSize.search(
        { spec: s.request.target.spec, data: s.request.target.data, options: o, headroom: DEFAULT_HEADROOM, stepsPerTrial: 5, searchId: this.job.searchId },
        { allowPathsOutsideWorkspace: this.options.allowPathsOutsideWorkspace },
      );
      return { recommended: r.recommended, runId: r.runId, verdict: r.verdict };
    } catch (err) {
      if (this.job.cancelled) throw new WizardCancelled('cancelled during the batch-size search');
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

  private async baseline(config: OptimiseConfig, prepared: PreparedBenchmark, measuredReps: EngineRepetition[]): Promise<OptimiseBaseline> {
    const reps = measuredReps.map((r) => r.measured);
    const samples = reps.map((r) => r.repetition.samplesPerSec);
    const perJoule = WizardLoop.perJoule(measuredReps);
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
      noiseFloor: this.loop.baselineNoise(measuredReps),
      ...(perJoule ? { samplesPerJoule: medianInterval(perJoule) } : {}),
      stepMs: aggregate.steadyStateMeanMs,
      phasesMs: aggregate.phasesMs,
      phasesPercent: aggregate.phasesPercent,
      device: last.memory.device,
      cpuMean: aggregate.telemetry.cpuMean,
      gpuUtilizationMean: aggregate.telemetry.gpuUtilizationMean,
      memoryBytes: last.memory.measured.total,
      deviceTotalBytes: await this.service.parts.benchmarks.deviceMemory(last.memory.device),
      meanLoss: losses.length ? medianInterval(losses).median : null,
    };
  }

  /** Progress outside the loop's phases (preparing, limits, the batch search, done). */
  private progress(phase: OptimiseProgress['phase'], label: string | null = null): void {
    this.loop.progress(phase, null, 0, 0, label, null, !!this.state.final);
  }

  private emit(p: LoopProgress): void {
    const s = this.state;
    const full: OptimiseProgress = { optimiseId: s.optimiseId, target: 'engine', runId: this.run.id, maxTrials: s.request.maxTrials, elapsedSeconds: this.seconds(), ...p };
    this.service.parts.events.emit('optimise.progress', full);
    this.options.onProgress?.(full);
  }
}
