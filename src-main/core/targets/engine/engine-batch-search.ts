import type { BatchSearchProgress, BatchSearchRequest, BatchTrial, EngineSearchDetail, EngineTrialDetail } from '../../../api/batch-size';
import { BatchSearchResultSchema } from '../../../api/batch-size';
import { ApiError } from '../../../api/errors';
import type { MemoryBreakdown, TrainOptions, TrainStepEvent } from '../../../api/training';
import { recordsPerEpoch, EngineTrainSummarySchema, TrainStepEventSchema } from '../../../api/training';
import type { EngineClient } from '../../../engine/engine-client';
import type { HostTrainData } from '../../../engine/host-protocol';
import { readManifest } from '../../datasets/cache-store';
import type { DatasetService } from '../../datasets/dataset-service';
import type { EventHub } from '../../common/event-hub';
import { describeComputeDevice } from '../../common/compute-device';
import type { RunRecord } from '../../workspace/run-store';
import { partId } from '../../../api/ids';
import type { RunningJob } from '../../jobs/running-jobs';
import type { BatchPlan } from '../target-runner';
import type { Workspace } from '../../workspace/workspace';
import { microBatchFor, seedBatch, trialEpochs } from './batch-memory';
import { trialSamplesPerSec } from './batch-trial-throughput';
import { verdictLine } from './batch-verdict';

/** Largest batch the predictions are asked for when seeding (the engine's batch limit is 2^20). */
const MAX_SEED_POWER = 20;
/** Least time between two step progress events of one trial (its start is always sent). */
const STEP_PROGRESS_MS = 250;

/**
 * The batch-size search's engine side: the memory to fill (the device's, or a CPU memory limit), the memory
 * model's predictions that seed it, and each trial a fresh training of a few steps (no test set, no
 * checkpoint) where an E_OOM or an engine crash is an outcome; after each trial the engine's training-buffer
 * bytes are checked against their value before it. The one loop is core/batch-size/search-loop.ts.
 */
export class EngineBatchSearch {
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

  async plan(request: BatchSearchRequest & { jobId: string }, job: RunningJob, options: { allowPathsOutsideWorkspace?: boolean; onTrial?: (trial: BatchTrial) => void }): Promise<BatchPlan> {
    const started = Date.now();
    const jobId = request.jobId;
    const seconds = (since: number) => (Date.now() - since) / 1000;
    const progress = (p: Pick<BatchSearchProgress, 'phase' | 'trial' | 'step'>, trialStarted = Date.now()) =>
      this.events.emit('batchSize.progress', { jobId, ...p, steps: request.stepsPerTrial, elapsedSeconds: seconds(started), trialSeconds: seconds(trialStarted) });
    // Caching the data on first use can take a while: the search says so at once.
    progress({ phase: 'preparing', trial: null, step: 0 });
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

    const trials: BatchTrial[] = [];
    const runTrial = async (run: RunRecord, batchSize: number, accumulation: number): Promise<BatchTrial> => {
      const trialRunId = partId(run.id, `trial-${trials.length}`);
      // Wired before the trial's set-up, and checked after it: a cancel meanwhile never lets the trial train.
      job.cancel = () => this.engine.cancelTraining(trialRunId);
      await predict([batchSize]);
      const before = (await this.engine.engineMemory()).chargedBytes;
      if (job.cancelled) {
        job.cancel = null;
        throw new ApiError('E_CANCELLED', `the batch-size search was cancelled before the trial at batch ${batchSize}, after ${trials.length} trial(s)`);
      }
      const t0 = Date.now();
      const steps: TrainStepEvent[] = [];
      let trial: Omit<BatchTrial, 'target'>;
      let processPeak: number | null = null;
      const common = { index: trials.length, batchSize, accumulation };
      const running = { index: common.index, batchSize, accumulation };
      progress({ phase: 'trial', trial: running, step: 0 }, t0);
      let sentAt = Date.now();
      try {
        // Enough epochs for stepsPerTrial steps: near the dataset's size an epoch is a single step.
        const epochs = trialEpochs(request.stepsPerTrial, drawn, batchSize * accumulation);
        const raw = await this.engine.train({ runId: trialRunId, spec: request.spec, data, options: { ...base, batchSize, accumulation, epochs } }, (e) => {
          const step = TrainStepEventSchema.safeParse(e);
          if (!step.success) return;
          steps.push(step.data);
          if (Date.now() - sentAt < STEP_PROGRESS_MS) return;
          sentAt = Date.now();
          progress({ phase: 'trial', trial: running, step: Math.min(step.data.globalStep, request.stepsPerTrial) }, t0);
        });
        const result = EngineTrainSummarySchema.pick({ stepTime: true, memory: true, processMemory: true }).parse(raw);
        // On the CPU the engine's buffers are charged as its memory model sizes them: what the OS saw is the measurement.
        if (result.memory.device === 'cpu' && result.processMemory?.scope === 'run') processPeak = result.processMemory.peakRssBytes;
        const peakBytes = result.memory.peakBytes ?? result.memory.measured.total;
        const { samplesPerSec, unmeasured } = trialSamplesPerSec(steps, batchSize * accumulation, result.stepTime.steadyStateMeanMs);
        trial = { ...common, outcome: 'ok', samplesPerSec, peakBytes, fits: peakBytes <= usableBytes, seconds: (Date.now() - t0) / 1000, message: unmeasured };
      } catch (err) {
        const code = err instanceof ApiError ? err.code : 'E_INTERNAL';
        if (code !== 'E_OOM' && code !== 'E_ENGINE_CRASHED') throw err;
        const outcome = code === 'E_OOM' ? 'E_OOM' : 'crash';
        trial = { ...common, outcome, samplesPerSec: null, peakBytes: null, fits: false, seconds: (Date.now() - t0) / 1000, message: (err as Error).message };
      } finally {
        job.cancel = null;
      }
      // After a crash the restarted host starts from nothing, which is its baseline too.
      const after = (await this.engine.engineMemory()).chargedBytes;
      const target: EngineTrialDetail = {
        kind: 'engine',
        predicted: predictions.get(batchSize)!,
        memoryBeforeBytes: before,
        memoryAfterBytes: after,
        backAtBaseline: after === (trial.outcome === 'crash' ? 0 : before),
        processPeakRssBytes: processPeak,
      };
      const done: BatchTrial = { ...trial, target };
      trials.push(done);
      run.appendEvent({ type: 'trial', ...done });
      this.events.emit('batchSize.trial', { jobId, runId: run.id, trial: done });
      options.onTrial?.(done);
      return done;
    };

    return {
      config: { ...request, cachedData: fullData },
      computeDevice: describeComputeDevice(await this.engine.devices(), request.options.device),
      seed,
      maxBatch: searchCap,
      // The user's batch and its doublings below the seed are measured too: small trials are cheap.
      ladderFrom: request.options.batchSize,
      trial: (b, run) => runTrial(run, b, 1),
      result: async (run, { largestFitting, recommended, cancelled }, elapsed) => {
        let globalBatch: EngineSearchDetail['globalBatch'] = null;
        if (request.globalBatch !== undefined && largestFitting !== null && !cancelled) {
          const { microBatch, accumulation } = microBatchFor(request.globalBatch, largestFitting);
          // The split is verified by training it, so the answer is a measurement, not arithmetic.
          const check = accumulation === 1 ? trials.find((t) => t.batchSize === microBatch && t.fits) : await runTrial(run, microBatch, accumulation);
          if (check?.outcome === 'ok') globalBatch = { global: request.globalBatch, microBatch, accumulation, samplesPerSec: check.samplesPerSec };
        }
        const verdict = verdictLine({ trials, largestFitting, recommended, headroom: request.headroom, capacityBytes: cap.bytes, baseBatch: request.options.batchSize, globalBatch });
        return BatchSearchResultSchema.parse({
          runId: run.id,
          runDir: run.relativeDir,
          title: `${request.spec.family} on ${manifest.name}`,
          device: cap.device,
          capacityBytes: cap.bytes,
          headroom: request.headroom,
          largestFitting,
          recommended,
          trials,
          verdict,
          seconds: Math.max(elapsed, (Date.now() - started) / 1000),
          target: { kind: 'engine', data: `${manifest.name} (${records} records)`, capacitySource: cap.source, usableBytes, seedBatch: seed, maxBatch, globalBatch },
        });
      },
      close: () => Promise.resolve(),
    };
  }
}
