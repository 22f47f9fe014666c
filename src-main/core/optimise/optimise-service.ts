import os from 'node:os';

import { DEFAULT_HEADROOM } from '../../api/batch-size';
import { TrainingBenchmarkRequestSchema } from '../../api/benchmark';
import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import type {
  OptimiseBaseline,
  OptimiseChange,
  OptimiseConfig,
  OptimiseFinal,
  OptimiseProgress,
  OptimiseRequest,
  OptimiseResult,
  OptimiseTrial,
  WizardState,
} from '../../api/optimise';
import { OptimiseResultSchema } from '../../api/optimise';
import { recordsPerEpoch } from '../../api/training';
import type { EngineClient } from '../../engine/engine-client';
import type { BatchSizeService } from '../batch-size/batch-size-service';
import type { ActiveJob, MeasuredRepetition, PreparedBenchmark, TrainingBenchmarkService } from '../benchmarks/training-benchmark';
import { aggregateRepetitions } from '../benchmarks/benchmark-summary';
import type { EventHub } from '../event-hub';
import { interruptionOf, readRun } from '../run-reader';
import type { RunRecord } from '../run-store';
import { describeComputeDevice } from '../compute-device';
import { createRun, newRunId } from '../run-store';
import { medianInterval } from '../stats/bootstrap';
import type { Workspace } from '../workspace';
import { diagnose } from './diagnosis';
import type { KnobContext } from './knobs';
import { applyChange } from './knobs';
import { measureLimits } from './measure-limits';
import { PRESETS } from './presets';
import { cancelledMessage, configKey, initialState, nextChange, trialsLeft } from './resumable-run';
import type { FinalWords } from './final-verdict';
import { measuredVerdict, unchangedVerdict } from './final-verdict';
import { wizardEta } from './eta';
import { decideTrial, meanLoss, noiseFloor, pairedSpeedup, relativeLossDelta } from './trial-decision';
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

/** Thrown inside a session when the user cancels; turned into the saved state and E_CANCELLED at the top. */
class Cancelled extends Error {}

const median = (xs: readonly number[]) => medianInterval(xs).median;

/**
 * The optimisation wizard: a baseline, a diagnosis and the physical limits,
 * then coordinate ascent over the knobs, one change at a time on top of the
 * current best, each measured A/B/A/B and kept only when its speedup beats the
 * noise. The state is saved after every step, so a killed app resumes it.
 */
/** How the final card speaks of the engine's configuration (the script wizard's words are in script-optimise.ts). */
const ENGINE_WORDS: FinalWords = {
  subject: 'The final configuration',
  unchanged: 'keep the baseline configuration',
  allowRecipe: 'allow recipe changes (--allow-recipe-changes, or the box in the Optimise area)',
};

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
        if (err instanceof Cancelled || (err instanceof ApiError && err.code === 'E_CANCELLED' && job.cancelled)) {
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
    const prepared = await this.benchmarks.prepare(benchmarkRequest(state.request, state.best), { allowPathsOutsideWorkspace: options.allowPathsOutsideWorkspace, readFrom: state.best.readFrom });
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
      baseline: state.baseline,
      diagnosis: state.diagnosis,
      limits: state.limits,
      trials: state.trials,
      skipped: state.skipped,
      batchSearch: state.batchSearch,
      final: state.final,
      seconds: state.seconds,
    });
    if (!parsed.success) throw new ApiError('E_INTERNAL', `the optimisation result does not match the contract: ${formatIssues(parsed.error, 'result')}`);
    return parsed.data;
  }
}

/** The benchmark request that measures one configuration of the target, one repetition at a time. */
function benchmarkRequest(request: OptimiseRequest, config: OptimiseConfig) {
  const parsed = TrainingBenchmarkRequestSchema.safeParse({
    spec: request.target.spec,
    data: request.target.data,
    options: config.options,
    warmupSteps: request.warmupSteps,
    steps: request.steps,
    repeat: 1,
  });
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `bad optimisation target: ${formatIssues(parsed.error, 'target')}`);
  return parsed.data;
}

/** One process's stretch of a wizard: from wherever the saved state stands to the end (or a cancel). */
class Session {
  private readonly prepared = new Map<string, PreparedBenchmark>();
  private repetitions = 0;
  private readonly repSeconds: number[] = [];
  private readonly startedAt = Date.now();
  private readonly secondsBefore: number;
  private ctx: KnobContext | null = null;

  constructor(
    private readonly service: OptimiseService,
    private readonly state: WizardState,
    private readonly run: RunRecord,
    private readonly job: Job,
    private readonly options: OptimiseRunOptions,
  ) {
    this.secondsBefore = state.seconds;
  }

  async go(): Promise<OptimiseResult> {
    const s = this.state;
    const k = s.request.repeat;
    this.progress('preparing', null, 0, 0, null, null);
    const basePrepared = await this.prepare(s.baseline?.config ?? s.best);
    const title = `${s.request.target.spec.family} on ${basePrepared.data.description}`;
    const manifest = basePrepared.manifest;
    const drawnPerEpoch = recordsPerEpoch(manifest.records, basePrepared.options.sampleRatio);

    if (!s.baseline) {
      const config = s.best;
      const reps: MeasuredRepetition[] = [];
      for (let i = 0; i < k; i++) {
        reps.push(await this.measure(config));
        this.progress('baseline', null, i + 1, k, null, null);
      }
      s.baseline = await this.baseline(config, basePrepared, reps);
      s.diagnosis = diagnose(s.baseline);
      await this.save();
    }
    this.ctx = { device: s.baseline.device, cpus: os.cpus().length, recordsPerEpoch: drawnPerEpoch };
    if (!s.limits) {
      this.progress('limits', null, 0, 0, null, null);
      s.limits = await measureLimits(this.service.parts.engine, s.request.target.spec, s.baseline.config, basePrepared, s.baseline.stepMs, s.baseline.device);
      await this.save();
    }

    if (!s.batchSearch) {
      s.batchSearch = await this.searchBatch(basePrepared);
      await this.save();
    }
    this.ctx.searchedBatch = s.batchSearch.recommended;

    for (let change = nextChange(s, this.ctx); change; change = nextChange(s, this.ctx)) {
      const trial = await this.trial(s.trials.length + 1, change);
      s.trials.push(trial);
      if (trial.kept) {
        s.best = applyChange(s.best, change);
        s.exhausted = [];
      } else {
        s.exhausted.push(change.knob);
      }
      this.run.appendEvent({ type: 'optimise.trial', trial });
      await this.save();
      this.progress('trial', trial.index, k, k, change.label, trial);
    }

    if (!s.final) {
      s.final = await this.final();
      await this.save();
    }
    s.status = 'completed';
    s.seconds = this.seconds();
    await this.save();
    this.progress('done', null, 0, 0, null, null);
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
    this.progress('batch-search', null, 0, 0, 'searching the batch size', null);
    if (this.job.cancelled) throw new Cancelled();
    this.job.searchId = `${this.run.id}-batch-search`;
    try {
      const r = await this.service.parts.batchSize.search(
        { spec: s.request.target.spec, data: s.request.target.data, options: o, headroom: DEFAULT_HEADROOM, stepsPerTrial: 5, searchId: this.job.searchId },
        { allowPathsOutsideWorkspace: this.options.allowPathsOutsideWorkspace },
      );
      return { recommended: r.recommended, runId: r.runId, verdict: r.verdict };
    } catch (err) {
      if (this.job.cancelled) throw new Cancelled();
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

  private async prepare(config: OptimiseConfig): Promise<PreparedBenchmark> {
    const key = configKey(config);
    let p = this.prepared.get(key);
    if (!p) {
      p = await this.service.parts.benchmarks.prepare(benchmarkRequest(this.state.request, config), {
        allowPathsOutsideWorkspace: this.options.allowPathsOutsideWorkspace,
        readFrom: config.readFrom,
      });
      this.prepared.set(key, p);
    }
    return p;
  }

  /** One repetition of a configuration, a fresh engine trainer, recorded into this session's run. */
  private async measure(config: OptimiseConfig): Promise<MeasuredRepetition> {
    if (this.job.cancelled) throw new Cancelled();
    const prepared = await this.prepare(config);
    const n = ++this.repetitions;
    const t0 = Date.now();
    const m = await this.service.parts.benchmarks.repetition(n, prepared, this.run, this.job.bench, `${this.run.id}-r${n}`);
    this.repSeconds.push((Date.now() - t0) / 1000);
    if (this.job.cancelled) throw new Cancelled();
    return m;
  }

  private async baseline(config: OptimiseConfig, prepared: PreparedBenchmark, reps: MeasuredRepetition[]): Promise<OptimiseBaseline> {
    const samples = reps.map((r) => r.repetition.samplesPerSec);
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
      noiseFloor: noiseFloor(samples),
      stepMs: aggregate.steadyStateMeanMs,
      phasesMs: aggregate.phasesMs,
      phasesPercent: aggregate.phasesPercent,
      device: last.memory.device,
      cpuMean: aggregate.telemetry.cpuMean,
      gpuUtilizationMean: aggregate.telemetry.gpuUtilizationMean,
      memoryBytes: last.memory.measured.total,
      deviceTotalBytes: await this.service.parts.benchmarks.deviceMemory(last.memory.device),
      meanLoss: losses.length ? median(losses) : null,
    };
  }

  /** The current best and the candidate, k repetitions each, interleaved A/B/A/B so a drift hits both. */
  private async interleaved(a: OptimiseConfig, b: OptimiseConfig, phase: 'trial' | 'final', index: number | null, label: string) {
    const k = this.state.request.repeat;
    const out = { a: [] as number[], b: [] as number[], aLoss: [] as number[], bLoss: [] as number[] };
    for (let i = 0; i < k; i++) {
      const ma = await this.measure(a);
      out.a.push(ma.repetition.samplesPerSec);
      const la = meanLoss(ma.steps);
      if (la !== null) out.aLoss.push(la);
      const mb = await this.measure(b);
      out.b.push(mb.repetition.samplesPerSec);
      const lb = meanLoss(mb.steps);
      if (lb !== null) out.bLoss.push(lb);
      this.progress(phase, index, i + 1, k, label, null);
    }
    return out;
  }

  private async trial(index: number, change: OptimiseChange): Promise<OptimiseTrial> {
    const s = this.state;
    const t0 = Date.now();
    const candidate = applyChange(s.best, change);
    const partial = { best: [] as number[], cand: [] as number[] };
    try {
      const m = await this.interleaved(s.best, candidate, 'trial', index, change.label);
      partial.best = m.a;
      partial.cand = m.b;
      const lossDelta = relativeLossDelta(m.bLoss.length ? median(m.bLoss) : null, m.aLoss.length ? median(m.aLoss) : null);
      const verdict = decideTrial({
        best: m.a,
        candidate: m.b,
        noiseFloor: s.baseline?.noiseFloor ?? 0,
        lossDelta,
        lossTolerance: PRESETS[s.request.preset].lossTolerance(change, s.request.lossTolerance),
        recipeChange: change.kind === 'recipe',
        allowRecipeChanges: s.request.allowRecipeChanges,
      });
      return {
        index,
        change,
        decision: verdict.decision,
        why: verdict.why,
        speedup: verdict.speedup,
        bestSamplesPerSec: m.a,
        candidateSamplesPerSec: m.b,
        lossDelta,
        kept: verdict.kept,
        seconds: (Date.now() - t0) / 1000,
        error: null,
      };
    } catch (err) {
      if (err instanceof Cancelled || this.job.cancelled) throw err;
      // A crash or an OOM is what this change did: recorded as the trial's outcome; the supervisor restarts the host.
      const e = err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
      const what = e.code === 'E_OOM' ? 'ran out of memory' : e.code === 'E_ENGINE_CRASHED' ? 'crashed the engine host' : `failed (${e.code})`;
      return {
        index,
        change,
        decision: 'crashed',
        why: `the trial ${what}; the wizard continues from the current best`,
        speedup: null,
        bestSamplesPerSec: partial.best,
        candidateSamplesPerSec: partial.cand,
        lossDelta: null,
        kept: false,
        seconds: (Date.now() - t0) / 1000,
        error: e.message,
      };
    }
  }

  /** The best configuration against the baseline, measured A/B/A/B once more: the speedup reported is this measurement. */
  private async final(): Promise<OptimiseFinal> {
    const s = this.state;
    const baseline = s.baseline;
    if (!baseline) throw new ApiError('E_INTERNAL', 'the final comparison needs the baseline');
    const kept = s.trials.filter((t) => t.kept).map((t) => t.change.label);
    const proposals = s.trials.filter((t) => t.decision === 'proposed').map((t) => `${t.change.label}: ${t.change.note ?? ''}`.trim());
    if (kept.length === 0) {
      return {
        config: s.best,
        changes: [],
        speedup: { low: 1, median: 1, high: 1 },
        samplesPerSec: baseline.samplesPerSec,
        verdict: unchangedVerdict(s.trials, baseline.noiseFloor, baseline.samplesPerSec.median, ENGINE_WORDS),
        proposals,
      };
    }
    const m = await this.interleaved(baseline.config, s.best, 'final', null, 'final configuration vs baseline');
    const { coverage, ...speedup } = pairedSpeedup(m.a, m.b);
    const verdict = measuredVerdict(s.trials, speedup, coverage, m.a.length, ENGINE_WORDS);
    return { config: s.best, changes: kept, speedup, samplesPerSec: medianInterval(m.b), verdict, proposals };
  }

  private progress(phase: OptimiseProgress['phase'], trial: number | null, repetition: number, repetitions: number, label: string | null, finishedTrial: OptimiseTrial | null) {
    const s = this.state;
    // Before the diagnosis the trials left are the budget: an upper bound that tightens once the knobs are known.
    const eta = wizardEta({
      launchSeconds: this.repSeconds,
      phase,
      repetition,
      repeat: s.request.repeat,
      trialsLeft: trialsLeft(s, this.ctx) - (phase === 'trial' && !finishedTrial ? 1 : 0),
      finalDone: !!s.final,
    });
    const p: OptimiseProgress = {
      optimiseId: s.optimiseId,
      runId: this.run.id,
      phase,
      trial,
      maxTrials: s.request.maxTrials,
      repetition,
      repetitions,
      label,
      elapsedSeconds: this.seconds(),
      etaSeconds: eta,
      finishedTrial,
    };
    this.service.parts.events.emit('optimise.progress', p);
    this.options.onProgress?.(p);
  }
}
