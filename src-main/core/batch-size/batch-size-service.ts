import type { BatchSearchProgress, BatchSearchRequest, BatchSearchResult, BatchTrial } from '../../api/batch-size';
import { BatchSearchResultSchema } from '../../api/batch-size';
import { ApiError } from '../../api/errors';
import type { MemoryBreakdown, TrainOptions, TrainStepEvent } from '../../api/training';
import { recordsPerEpoch, TrainResultSchema, TrainStepEventSchema } from '../../api/training';
import type { EngineClient } from '../../engine/engine-client';
import type { HostTrainData } from '../../engine/host-protocol';
import { readManifest } from '../datasets/cache-store';
import type { DatasetService } from '../datasets/dataset-service';
import type { EventHub } from '../event-hub';
import { describeComputeDevice } from '../compute-device';
import { createRun } from '../run-store';
import type { Workspace } from '../workspace';
import { microBatchFor, seedBatch, trialEpochs } from './planner';
import { searchBatches } from './search-loop';
import { trialSamplesPerSec } from './trial-throughput';
import { verdictLine } from './verdict';

export interface SearchOptions {
  onTrial?: (trial: BatchTrial) => void;
  /** Called once the search has its run id (its searchId), before the first trial. */
  onStart?: (searchId: string) => void;
  /** As for training: the CLI may read data from anywhere, the UI only from the workspace. */
  allowPathsOutsideWorkspace?: boolean;
}

/** Largest batch the predictions are asked for when seeding (the engine's batch limit is 2^20). */
const MAX_SEED_POWER = 20;
/** Least time between two step progress events of one trial (its start is always sent). */
const STEP_PROGRESS_MS = 250;

interface ActiveSearch {
  cancelled: boolean;
  trialRunId: string | null;
}

/**
 * Runs the batch-size search through the engine: each trial is a fresh training of a
 * few steps (no test set, no checkpoint), an E_OOM or an engine crash is an outcome,
 * every trial is recorded in a run of kind `batch-search`, and after each trial the
 * engine's training-buffer bytes are checked against their value before it.
 */
export class BatchSizeService {
  private readonly active = new Map<string, ActiveSearch>();

  constructor(
    private readonly engine: EngineClient,
    private readonly events: EventHub,
    private readonly workspace: Workspace,
    private readonly datasets: DatasetService,
  ) {}

  private async capacity(options: TrainOptions): Promise<{ device: string; bytes: number; source: 'memory-limit' | 'device' }> {
    let device = options.device;
    const devices = await this.engine.devices();
    if (device === 'auto') device = devices.cuda.available ? 'cuda:0' : 'cpu';
    if (device === 'cpu') {
      if (options.memoryLimitBytes <= 0) {
        throw new ApiError('E_BAD_INPUT', 'the CPU has no device memory for the search to fill: give a memory limit (the CPU memory limit field, or --memory-limit on the CLI) or a CUDA device');
      }
      return { device, bytes: options.memoryLimitBytes, source: 'memory-limit' };
    }
    if (options.memoryLimitBytes > 0) {
      throw new ApiError('E_BAD_INPUT', `a memory limit applies to the CPU backend only; on ${device} the device's own memory is the limit: leave it out`);
    }
    const { index } = await this.engine.resolveDevice(device);
    const gpu = devices.cuda.devices.find((d) => d.index === index);
    if (!gpu) throw new ApiError('E_BAD_INPUT', `device ${device} is not present: ${devices.cuda.reason ?? 'no such CUDA device'}`);
    return { device, bytes: gpu.totalMemoryBytes, source: 'device' };
  }

  async search(request: BatchSearchRequest, options: SearchOptions = {}): Promise<BatchSearchResult> {
    if (request.searchId !== undefined && this.active.has(request.searchId)) {
      throw new ApiError('E_BAD_INPUT', `a search with id ${request.searchId} is already running: choose another searchId`);
    }
    const state: ActiveSearch = { cancelled: false, trialRunId: null };
    // Registered at once, so a cancel during the data preparation is not lost.
    const early = request.searchId;
    if (early !== undefined) this.active.set(early, state);
    try {
      return await this.searchWith(request, options, state);
    } finally {
      if (early !== undefined) this.active.delete(early);
    }
  }

  private async searchWith(request: BatchSearchRequest, options: SearchOptions, state: ActiveSearch): Promise<BatchSearchResult> {
    const started = Date.now();
    const seconds = (since: number) => (Date.now() - since) / 1000;
    const progress = (searchId: string, p: Pick<BatchSearchProgress, 'phase' | 'trial' | 'step'>, trialStarted = Date.now()) =>
      this.events.emit('batchSize.progress', { searchId, ...p, steps: request.stepsPerTrial, elapsedSeconds: seconds(started), trialSeconds: seconds(trialStarted) });
    // Caching the data on first use can take a while: a caller who named the search hears of it at once.
    if (request.searchId !== undefined) progress(request.searchId, { phase: 'preparing', trial: null, step: 0 });
    const cap = await this.capacity(request.options);
    const usableBytes = Math.floor(cap.bytes * (1 - request.headroom));
    const fullData = await this.datasets.trainingData(request.data, { allowPathsOutsideWorkspace: options.allowPathsOutsideWorkspace });
    const data: HostTrainData = { ...fullData, test: undefined }; // trials measure training only
    const manifest = await readManifest(this.workspace, fullData.train.dir);
    const records = manifest.records;
    const drawn = recordsPerEpoch(records, request.options.sampleRatio);
    const maxBatch = Math.min(1 << MAX_SEED_POWER, drawn);
    if (request.globalBatch !== undefined && request.globalBatch > maxBatch) {
      throw new ApiError('E_BAD_INPUT', `global batch ${request.globalBatch} is larger than the ${maxBatch} samples the training data gives per epoch: ask for at most ${maxBatch}`);
    }
    const searchCap = Math.min(maxBatch, request.globalBatch ?? maxBatch);
    // One warm-up step: the engine's steady state then leaves out the cold first step (trial-throughput.ts).
    const base: TrainOptions = { ...request.options, epochs: 1, maxSteps: request.stepsPerTrial, warmupSteps: 1, accumulation: 1, eventIntervalMs: 20 };
    // The engine refuses bad settings here (precision, device, optimizer ...), before a run exists.
    await this.engine.checkTraining({ spec: request.spec, data, options: { ...base, batchSize: 1, memoryLimitBytes: 0 } });

    const predictions = new Map<number, MemoryBreakdown>();
    const predict = async (batches: number[]) => {
      const missing = batches.filter((b) => !predictions.has(b));
      if (!missing.length) return;
      const got = await this.engine.predictMemory({ spec: request.spec, data, options: { ...base, memoryLimitBytes: 0 }, batchSizes: missing });
      missing.forEach((b, i) => predictions.set(b, got[i]));
    };
    const powers = Array.from({ length: MAX_SEED_POWER + 1 }, (_, i) => 2 ** i).filter((b) => b <= searchCap);
    await predict(powers);
    const seed = seedBatch((b) => predictions.get(b)!.total, usableBytes, searchCap);

    const run = await createRun(this.workspace, 'batch-search', { ...request, cachedData: fullData }, { computeDevice: describeComputeDevice(await this.engine.devices(), request.options.device) });
    const searchId = request.searchId ?? run.id;
    this.active.set(searchId, state);
    options.onStart?.(searchId);
    const trials: BatchTrial[] = [];
    const runTrial = async (batchSize: number, accumulation: number): Promise<BatchTrial> => {
      await predict([batchSize]);
      const before = (await this.engine.engineMemory()).chargedBytes;
      const t0 = Date.now();
      const steps: TrainStepEvent[] = [];
      state.trialRunId = `${run.id}-trial-${trials.length}`;
      let trial: Omit<BatchTrial, 'memoryAfterBytes' | 'backAtBaseline'>;
      const common = { index: trials.length, batchSize, accumulation, predicted: predictions.get(batchSize)!, memoryBeforeBytes: before };
      const running = { index: common.index, batchSize, accumulation };
      progress(searchId, { phase: 'trial', trial: running, step: 0 }, t0);
      let sentAt = Date.now();
      try {
        // Enough epochs for stepsPerTrial steps: near the dataset's size an epoch is a single step.
        const epochs = trialEpochs(request.stepsPerTrial, drawn, batchSize * accumulation);
        const raw = await this.engine.train({ runId: state.trialRunId, spec: request.spec, data, options: { ...base, batchSize, accumulation, epochs } }, (e) => {
          const step = TrainStepEventSchema.safeParse(e);
          if (!step.success) return;
          steps.push(step.data);
          if (Date.now() - sentAt < STEP_PROGRESS_MS) return;
          sentAt = Date.now();
          progress(searchId, { phase: 'trial', trial: running, step: Math.min(step.data.globalStep, request.stepsPerTrial) }, t0);
        });
        const result = TrainResultSchema.pick({ stepTime: true, memory: true }).parse(raw);
        const peakBytes = result.memory.peakBytes ?? result.memory.measured.total;
        const { samplesPerSec, unmeasured } = trialSamplesPerSec(steps, batchSize * accumulation, result.stepTime.steadyStateMeanMs);
        trial = { ...common, outcome: 'ok', samplesPerSec, peakBytes, fits: peakBytes <= usableBytes, seconds: (Date.now() - t0) / 1000, message: unmeasured };
      } catch (err) {
        const code = err instanceof ApiError ? err.code : 'E_INTERNAL';
        if (code !== 'E_OOM' && code !== 'E_ENGINE_CRASHED') throw err;
        const outcome = code === 'E_OOM' ? 'E_OOM' : 'crash';
        trial = { ...common, outcome, samplesPerSec: null, peakBytes: null, fits: false, seconds: (Date.now() - t0) / 1000, message: (err as Error).message };
      } finally {
        state.trialRunId = null;
      }
      // After a crash the restarted host starts from nothing, which is its baseline too.
      const after = (await this.engine.engineMemory()).chargedBytes;
      const done: BatchTrial = { ...trial, memoryAfterBytes: after, backAtBaseline: after === (trial.outcome === 'crash' ? 0 : before) };
      trials.push(done);
      run.appendEvent({ type: 'trial', ...done });
      this.events.emit('batchSize.trial', { searchId, trial: done });
      options.onTrial?.(done);
      return done;
    };

    try {
      // The user's batch and its doublings below the seed are measured too: small trials are cheap.
      const runner = { trial: (b: number) => runTrial(b, 1), cancelled: () => state.cancelled };
      const { largestFitting, recommended } = await searchBatches(runner, seed, searchCap, request.options.batchSize);
      let globalBatch: BatchSearchResult['globalBatch'] = null;
      if (request.globalBatch !== undefined && largestFitting !== null) {
        const { microBatch, accumulation } = microBatchFor(request.globalBatch, largestFitting);
        // The split is verified by training it, so the answer is a measurement, not arithmetic.
        const check = accumulation === 1 ? trials.find((t) => t.batchSize === microBatch && t.fits) : await runTrial(microBatch, accumulation);
        if (check?.outcome === 'ok') globalBatch = { global: request.globalBatch, microBatch, accumulation, samplesPerSec: check.samplesPerSec };
      }
      const verdict = verdictLine({
        trials,
        largestFitting,
        recommended,
        headroom: request.headroom,
        capacityBytes: cap.bytes,
        baseBatch: request.options.batchSize,
        globalBatch,
      });
      const result = BatchSearchResultSchema.parse({
        runId: run.id,
        runDir: run.relativeDir,
        device: cap.device,
        capacityBytes: cap.bytes,
        capacitySource: cap.source,
        headroom: request.headroom,
        usableBytes,
        seedBatch: seed,
        largestFitting,
        recommended,
        maxBatch,
        trials,
        globalBatch,
        verdict,
        seconds: (Date.now() - started) / 1000,
        data: `${manifest.name} (${records} records)`,
      });
      await run.finish('completed', { result });
      return result;
    } catch (err) {
      throw await run.fail(err);
    } finally {
      this.active.delete(searchId);
    }
  }

  /** Stops a search at its current trial (which ends within one micro-batch). */
  async cancel(searchId: string): Promise<{ cancelled: boolean }> {
    const state = this.active.get(searchId);
    if (!state) return { cancelled: false };
    state.cancelled = true;
    if (state.trialRunId) await this.engine.cancelTraining(state.trialRunId);
    return { cancelled: true };
  }
}
