import path from 'node:path';

import type { TrainingBenchmarkRequest, Utilisation } from '../../../api/benchmark';
import type { EngineBenchmarkResult, EngineRepetition } from '../../../api/benchmark-result';
import { BenchmarkResultSchema, isEngineBenchmark } from '../../../api/benchmark-result';
import { ApiError } from '../../../api/errors';
import { formatIssues } from '../../../api/format-issues';
import type { TelemetrySummary } from '../../../api/telemetry';
import type { TrainOptions, TrainStepEvent } from '../../../api/training';
import { MIN_EVENT_INTERVAL_MS, recordsPerEpoch, TrainEventSchema, TrainOptionsSchema, EngineTrainSummarySchema } from '../../../api/training';
import { isBuiltinModel } from '../../../api/model-spec';
import type { EngineClient } from '../../../engine/engine-client';
import type { HostSource, HostTrainData } from '../../../engine/host-protocol';
import type { CacheManifest } from '../../../api/datasets';
import type { SourceSpec } from '../../../api/datasets';
import { SourceSpecSchema } from '../../../api/datasets';
import { readManifest } from '../../datasets/cache-store';
import { openSource } from '../../datasets/importers/open-source';
import type { DatasetService } from '../../datasets/dataset-service';
import type { RunRecord } from '../../workspace/run-store';
import { RECIPES } from '../../../api/recipes';
import { describeComputeDevice } from '../../common/compute-device';
import type { TelemetryService } from '../../telemetry/telemetry-service';
import type { Workspace } from '../../workspace/workspace';
import { partId } from '../../../api/ids';
import type { RunningJob } from '../../jobs/running-jobs';
import type { BenchmarkPlan, RepetitionProgress } from '../target-runner';
import { aggregateRepetitions, findings, measuredPhases, mergeTelemetry, withOther } from '../../stats/benchmark-summary';
import { gemmPeakAbove } from './gemm-peak';
import { utilisationOf } from '../../stats/utilisation';
import { CPU_ENERGY_MISSING, energyPerSample } from '../../telemetry/energy';

/** Telemetry is sampled this often inside the measured window, which may last only a second or two. */
const TELEMETRY_INTERVAL_MS = 200;

/** Only what a benchmark reads of the engine's training summary. */
const EngineSummarySchema = EngineTrainSummarySchema.pick({ steps: true, stepTime: true, memory: true, backend: true, processMemory: true });

export interface PrepareOptions {
  allowPathsOutsideWorkspace?: boolean;
  /** 'source': the engine reads the training records from the source files in place (the uncached path). */
  readFrom?: 'cache' | 'source';
}

/** A request made ready to measure: its data in the engine's terms and the options every repetition uses. */
export interface PreparedBenchmark {
  request: TrainingBenchmarkRequest;
  data: HostTrainData;
  options: TrainOptions;
  stepsPerEpoch: number;
  perStep: number;
  manifest: CacheManifest;
  /** Files the training records are read from: the cache's shards, or the source files. */
  readFiles: string[];
}

/** One repetition's result and the step events it recorded (the optimisation wizard compares their losses). */
export interface MeasuredRepetition {
  repetition: EngineRepetition;
  steps: TrainStepEvent[];
}

/**
 * The training benchmark's engine side: the data prepared once, then each repetition a fresh engine trainer
 * running warm-up plus measured optimizer steps with no evaluation and no checkpoint, summed up into the
 * benchmark's result (the one loop is core/benchmarks/benchmark-loop.ts).
 */
export class EngineBenchmarks {
  constructor(
    private readonly engine: EngineClient,
    private readonly workspace: Workspace,
    private readonly datasets: DatasetService,
    private readonly telemetry: TelemetryService,
  ) {}

  /** A benchmark made ready: its data cached and its options checked by the engine, the telemetry samplers started. */
  async plan(request: TrainingBenchmarkRequest & { jobId: string }, job: RunningJob, options: PrepareOptions): Promise<BenchmarkPlan<EngineRepetition>> {
    const prepared = await this.prepare(request, options);
    const computeDevice = describeComputeDevice(await this.engine.devices(), request.options.device);
    const samplers = await this.holdTelemetry();
    return {
      what: 'benchmark',
      unit: 'repetition',
      config: { ...request, cachedData: prepared.data },
      computeDevice,
      repetition: async (i, run, progress) => (await this.repetition(i, prepared, run, job, partId(run.id, `rep${i}`), progress)).repetition,
      recorded: (rep) => ({ event: rep, samplesPerSec: rep.samplesPerSec }),
      summarize: (run, reps) => this.summarize(request, prepared, run, reps),
      release: () => samplers.release(),
    };
  }

  /**
   * Starts the telemetry samplers for a series of repetitions run one by one (the optimisation
   * wizard's): their start-up then falls before the first measured step (TelemetryService.hold).
   */
  holdTelemetry(): Promise<{ release(): void }> {
    return this.telemetry.hold(TELEMETRY_INTERVAL_MS);
  }

  /**
   * The cached training data (no test set: a benchmark never evaluates) and the options every
   * repetition uses, checked by the engine. Public so a caller (the optimisation wizard) can
   * measure repetitions one at a time into a run of its own.
   */
  async prepare(request: TrainingBenchmarkRequest, options: PrepareOptions = {}): Promise<PreparedBenchmark> {
    const all = await this.datasets.trainingData(request.data, { allowPathsOutsideWorkspace: options.allowPathsOutsideWorkspace });
    const manifest = await readManifest(this.workspace, all.train.dir);
    const data: HostTrainData = { train: all.train, normalize: all.normalize, description: `${manifest.name} (${manifest.records} records)` };
    let readFiles = manifest.shards.map((s) => path.join(all.train.dir, s.file));
    if (options.readFrom === 'source') {
      // The manifest's source paths are workspace data: confined as the request's own paths are.
      const raw = await rawTrainSource(manifest, (spec) => this.datasets.confine(spec, { allowPathsOutsideWorkspace: options.allowPathsOutsideWorkspace }));
      data.trainSource = raw.source;
      data.description += ', read from the source files in place';
      readFiles = raw.files;
    }
    const o = request.options;
    const perStep = o.batchSize * o.accumulation;
    const drawn = recordsPerEpoch(manifest.records, o.sampleRatio);
    const stepsPerEpoch = Math.floor(drawn / perStep);
    if (stepsPerEpoch === 0) {
      throw new ApiError(
        'E_BAD_INPUT',
        `batch size ${o.batchSize} x accumulation ${o.accumulation} needs ${perStep} samples per step but ${manifest.name} draws only ${drawn} per epoch (sample ratio ${o.sampleRatio}): lower the batch size or raise the sample ratio`,
      );
    }
    const totalSteps = request.warmupSteps + request.steps;
    const recipe = isBuiltinModel(request.spec.family) ? RECIPES[request.spec.family] : {};
    const parsed = TrainOptionsSchema.safeParse({
      ...o,
      optimizer: o.optimizer ?? recipe.optimizer,
      epochs: Math.min(100_000, Math.ceil(totalSteps / stepsPerEpoch)),
      maxSteps: totalSteps,
      warmupSteps: request.warmupSteps,
      eventIntervalMs: MIN_EVENT_INTERVAL_MS,
    });
    if (!parsed.success) throw new ApiError('E_BAD_INPUT', `bad benchmark option: ${formatIssues(parsed.error, 'options')}`);
    // Refused here, before a run exists, like training: a run folder means the engine accepted the request.
    await this.engine.checkTraining({ spec: request.spec, data, options: parsed.data });
    return { request, data, options: parsed.data, stepsPerEpoch, perStep, manifest, readFiles };
  }

  /**
   * One repetition, a fresh engine trainer, recorded into `run` (its step events and telemetry
   * file carry `i`); `engineRunId` lets `job` cancel it.
   */
  async repetition(
    i: number,
    prepared: PreparedBenchmark,
    run: RunRecord,
    job: RunningJob,
    engineRunId: string,
    progress: (p: RepetitionProgress) => void = () => undefined,
  ): Promise<MeasuredRepetition> {
    const { request } = prepared;
    job.cancel = () => this.engine.cancelTraining(engineRunId);
    const steps: TrainStepEvent[] = [];
    // Telemetry covers the measured window: it starts with the first event after the warm-up.
    const recording: { current: { stop(): Promise<TelemetrySummary> } | null } = { current: null };
    const startRecording = () => (recording.current ??= this.telemetry.record(run.stream(`telemetry-rep${i}.jsonl`, { append: true }), TELEMETRY_INTERVAL_MS, 'engine'));
    if (request.warmupSteps === 0) startRecording();
    try {
      const raw = await this.engine.train({ runId: engineRunId, spec: request.spec, data: prepared.data, options: prepared.options }, (rawEvent) => {
        const parsed = TrainEventSchema.safeParse(rawEvent);
        if (!parsed.success || parsed.data.type !== 'step') return;
        const e = parsed.data;
        steps.push(e);
        run.appendEvent({ type: 'benchmark.step', repetition: i, event: e });
        const measuring = e.globalStep > request.warmupSteps;
        if (measuring) startRecording();
        progress({ runId: run.id, phase: measuring ? 'measuring' : 'warmup', repetition: i, step: e.globalStep, samplesPerSec: null });
      });
      const stopping = recording.current;
      recording.current = null;
      const telemetry = stopping ? await stopping.stop() : mergeTelemetry([]);
      const summary = EngineSummarySchema.safeParse(raw);
      if (!summary.success) throw new ApiError('E_INTERNAL', `the engine's training summary does not match the contract: ${formatIssues(summary.error, 'result')}`);
      const t = summary.data.stepTime;
      // An addon built before warmupSteps existed ignores it and would time the wrong steps without a word.
      if (t.warmupSteps !== request.warmupSteps) {
        throw new ApiError(
          'E_INTERNAL',
          `the engine started its steady-state clock after ${t.warmupSteps} warm-up steps, not the ${request.warmupSteps} asked for: the addon predates the warmupSteps option; rebuild it (npm run build:native)`,
        );
      }
      if (t.steadyStateMeanMs === null || t.steadyStateMeanMs <= 0) {
        throw new ApiError('E_INTERNAL', `repetition ${i} measured no steady-state steps (${summary.data.steps} steps ran, warm-up ${t.warmupSteps})`);
      }
      const named = measuredPhases(steps, request.warmupSteps);
      const { phases, exceedsMs } = withOther(named.phases, t.steadyStateMeanMs);
      const repetition: EngineRepetition = {
        repetition: i,
        samplesPerSec: (1000 * prepared.perStep) / t.steadyStateMeanMs,
        steadyStateMeanMs: t.steadyStateMeanMs,
        wallClockMeanMs: t.wallClockMeanMs,
        phasesMs: phases,
        namedPhasesExceedStepMs: exceedsMs,
        telemetry,
        target: {
          kind: 'engine',
          phaseSteps: named.steps,
          memory: { ...summary.data.memory, device: summary.data.backend?.device ?? summary.data.memory.device },
          ...(summary.data.processMemory ? { processMemory: summary.data.processMemory } : {}),
        },
      };
      return { repetition, steps };
    } catch (err) {
      // The engine words a cancel as training's ("at step 2504 of 20005, epoch 3"): a benchmark has repetitions.
      if (err instanceof ApiError && err.code === 'E_CANCELLED') {
        const at = steps.at(-1)?.globalStep ?? 0;
        throw new ApiError('E_CANCELLED', `the benchmark was cancelled in repetition ${i} of ${request.repeat}, at step ${at.toLocaleString('en-US')} of its ${(request.warmupSteps + request.steps).toLocaleString('en-US')}`);
      }
      throw err;
    } finally {
      if (recording.current) await recording.current.stop();
      job.cancel = null;
    }
  }

  private async summarize(
    request: TrainingBenchmarkRequest,
    prepared: PreparedBenchmark,
    run: RunRecord,
    reps: EngineRepetition[],
  ): Promise<EngineBenchmarkResult> {
    const aggregate = aggregateRepetitions(reps, prepared.stepsPerEpoch);
    const last = reps[reps.length - 1];
    const device = last.target.memory.device;
    const deviceTotalBytes = await this.deviceMemory(device);
    const o = prepared.options;
    const utilisation = await this.utilisation(request, device, aggregate.samplesPerSecCi.median);
    const result = {
      runId: run.id,
      runDir: run.relativeDir,
      title: `${request.spec.family} on ${prepared.data.description}`,
      device,
      batchSize: o.batchSize,
      warmupSteps: request.warmupSteps,
      steps: request.steps,
      repeat: request.repeat,
      samplesPerSec: aggregate.samplesPerSecCi.median,
      samplesPerSecCi: aggregate.samplesPerSecCi,
      stepTime: {
        steadyStateMeanMs: aggregate.steadyStateMeanMs,
        wallClockMeanMs: aggregate.wallClockMeanMs,
        note: `steadyStateMeanMs: the ${request.steps} measured steps after ${request.warmupSteps} warm-up steps; wallClockMeanMs: every step, warm-up included (mean over ${request.repeat} repetitions)`,
      },
      phasesMs: aggregate.phasesMs,
      phasesPercent: aggregate.phasesPercent,
      namedPhasesExceedStepMs: aggregate.namedPhasesExceedStepMs,
      telemetry: aggregate.telemetry,
      findings: findings({ aggregate, device, repeat: request.repeat, measuredBytes: last.target.memory.measured.total, deviceTotalBytes }),
      utilisation,
      ...(({ energy, missing }) => ({ energy, energyMissing: missing }))(
        device.startsWith('cuda')
          ? energyPerSample(aggregate.telemetry, aggregate.samplesPerSecCi.median)
          : { energy: null, missing: CPU_ENERGY_MISSING },
      ),
      repetitions: reps,
      target: {
        kind: 'engine',
        data: prepared.data.description,
        precision: o.precision,
        optimizer: o.optimizer.kind,
        accumulation: o.accumulation,
        stepsPerEpoch: prepared.stepsPerEpoch,
        predictedEpochSeconds: aggregate.predictedEpochSeconds,
        memory: { predicted: last.target.memory.predicted, measured: last.target.memory.measured, device, deviceTotalBytes },
      },
    };
    const parsed = BenchmarkResultSchema.safeParse(result);
    if (!parsed.success) throw new ApiError('E_INTERNAL', `the benchmark result does not match the contract: ${formatIssues(parsed.error, 'result')}`);
    if (!isEngineBenchmark(parsed.data)) throw new ApiError('E_INTERNAL', 'the engine benchmark made a result of another target');
    return parsed.data;
  }

  /** MFU of the benchmark's median samples/s against the GEMM peak measured now on its device, and its datasheet's. */
  private async utilisation(request: TrainingBenchmarkRequest, device: string, samplesPerSec: number): Promise<Utilisation> {
    const o = request.options;
    const [info, devices] = [await this.engine.modelInfo(request.spec), await this.engine.devices()];
    const achievedGflops = (info.trainingFlopsPerSample * samplesPerSec) / 1e9;
    const { peak, missing } = await gemmPeakAbove(this.engine, device, o.precision, o.threads, achievedGflops);
    return utilisationOf({ flopsPerSample: info.flopsPerSample, trainingFlopsPerSample: info.trainingFlopsPerSample, samplesPerSec, peak, peakMissing: missing, deviceName: describeComputeDevice(devices, device).name, cuda: device.startsWith('cuda'), precision: o.precision });
  }

  /** Total memory of a CUDA device ('cuda:N'), for the headroom finding; null on the CPU. */
  async deviceMemory(device: string): Promise<number | null> {
    const m = /^cuda:(\d+)$/.exec(device);
    if (!m) return null;
    const devices = await this.engine.devices();
    return devices.cuda.devices.find((d) => d.index === Number(m[1]))?.totalMemoryBytes ?? null;
  }
}

/**
 * The engine's raw source for a cache's training records, read from the files it was built from:
 * refused, with the reason, when they cannot be read in place (compressed, text, generated).
 */
async function rawTrainSource(manifest: CacheManifest, confine: (spec: SourceSpec) => SourceSpec): Promise<{ source: HostSource; files: string[] }> {
  const spec = SourceSpecSchema.safeParse(manifest.source.spec);
  if (!spec.success) throw new ApiError('E_BAD_INPUT', `${manifest.name} cannot be read from its source: the cache does not record how to read it`);
  const source = await Promise.resolve()
    .then(() => openSource(confine(spec.data)))
    .catch((err: Error) => {
      throw new ApiError('E_BAD_INPUT', `${manifest.name} cannot be read from its source: it can no longer be opened (${err.message})`);
    });
  const layout = source.rawLayout();
  if (!layout) throw new ApiError('E_BAD_INPUT', `${manifest.name} cannot be read from its source: ${source.uncachedReason ?? 'no raw layout'}`);
  return { source: { kind: 'raw', layout: { records: source.records, fields: layout } }, files: [...new Set(layout.map((f) => f.file))] };
}
