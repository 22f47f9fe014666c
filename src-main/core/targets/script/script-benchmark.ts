import type { Finding } from '../../../api/benchmark';
import { RANKS_SHOWN } from '../../../api/benchmark';
import { ApiError } from '../../../api/errors';
import { formatIssues } from '../../../api/format-issues';
import { printable } from '../../../api/shell-word';
import type { ScriptBenchmarkRequest, ScriptFlops, ScriptRank, ScriptTarget } from '../../../api/script-target';
import type { ScriptBenchmarkDetail, ScriptBenchmarkResult, ScriptRepetition } from '../../../api/benchmark-result';
import { BenchmarkResultSchema, isScriptBenchmark } from '../../../api/benchmark-result';
import type { Utilisation } from '../../../api/benchmark';
import type { GemmPeak } from '../../stats/utilisation';
import { utilisationOf } from '../../stats/utilisation';
import type { BenchmarkAggregate } from '../../stats/benchmark-summary';
import { findings, mergeTelemetry, phaseShares, withOther } from '../../stats/benchmark-summary';
import type { EventHub } from '../../common/event-hub';
import type { RunRecord } from '../../workspace/run-store';
import { medianInterval } from '../../stats/medians';
import { CPU_ENERGY_MISSING, energyPerSample } from '../../telemetry/energy';
import type { TelemetryService } from '../../telemetry/telemetry-service';
import { probeDir, requireAbsoluteCwd } from '../../script/launcher';
import type { RunningJob, RunningJobs } from '../../jobs/running-jobs';
import type { BenchmarkPlan, OnOutput, RepetitionProgress } from '../target-runner';
import type { RankSummary } from '../../script/rank-stats';
import { combineRanks, rankCollectives, summarizeRank } from '../../script/rank-stats';
import type { ScriptCollectives } from '../../../api/collectives';
import type { ProbeMessage } from '../../script/probe-messages';
import { CPU_COPY_MISSING, scriptFloors } from '../../stats/limits';
import { scalingEfficiency } from '../../stats/collectives';
import { trialError } from '../../script/measured-launch';
import { launchMeasured } from '../../script/measured-launch';
import type { Followers } from '../../nodes/followers';
import { otherNodes } from '../../nodes/followers';
import { oneNodeCommand } from '../../nodes/one-node';

/** One launch as the benchmark keeps it: the repetition it records, with each rank's summary and the overrides applied. */
interface Launch {
  rep: ScriptRepetition;
  ranks: RankSummary[];
  applied: ScriptBenchmarkDetail['applied'];
  /** Rank 0's count of the model's forward FLOPs per sample, and torch's matmul rate after its measured steps. */
  flops: ScriptFlops | null;
  peak: ScriptPeak | null;
  /** Rank 0's pinned copy of one batch after its measured steps (CUDA only). */
  copy: Extract<ProbeMessage, { type: 'copy' }> | null;
  /** A job of several ranks at its collectives: the straggler, exposed communication, bandwidth. */
  collectives: ScriptCollectives | null;
}

/** torch's matmul rate, and the precision its fp32 matmuls ran in (tf32 where TensorFloat-32 was allowed). */
export type ScriptPeak = GemmPeak & { precision: 'fp32' | 'tf32' };

const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/** "python3 train.py --epochs 1" for titles (a run's title is shown in terminals and pages: no control character raw). */
export function commandText(t: ScriptTarget): string {
  return t.command.map((a) => printable(/[\s"']/.test(a) ? JSON.stringify(a) : a)).join(' ');
}

/**
 * The training benchmark's script side: each repetition a launch of the command with the probe, stopped after
 * the measured steps, its output kept beside the run; summed up into the benchmark's result (the one loop is
 * core/benchmarks/benchmark-loop.ts).
 */
export class ScriptBenchmarks {
  constructor(
    private readonly events: EventHub,
    private readonly telemetry: TelemetryService,
    private readonly jobs: RunningJobs,
    private readonly pythonDir: string = probeDir(),
  ) {}

  /** A benchmark of the command made ready: nothing runs before its first launch. */
  plan(request: ScriptBenchmarkRequest & { jobId: string }, job: RunningJob, options: { onOutput?: OnOutput; onJoin?: (code: string) => void }): BenchmarkPlan<Launch> {
    requireAbsoluteCwd(request.target);
    const nodes = otherNodes(request.collector, (code) => {
      this.events.emit('script.join', { jobId: request.jobId, code });
      options.onJoin?.(code);
    });
    // Checked before any launch: --one-node on a command that is not a torchrun job of several nodes compares nothing.
    const alone = request.oneNode ? oneNodeCommand(request.target.command) : null;
    if (request.oneNode && !alone) {
      throw new ApiError('E_BAD_INPUT', `--one-node needs a torchrun command of more than one node (--nnodes 2 or more), to launch on this node alone; got ${commandText(request.target)}`);
    }
    return {
      what: 'script benchmark',
      unit: 'launch',
      config: {
        target: request.target,
        overrides: request.overrides,
        warmupSteps: request.warmupSteps,
        ...(request.steps !== undefined ? { steps: request.steps } : {}),
        repeat: request.repeat,
        timeoutSeconds: request.timeoutSeconds,
        ...(request.collectives ? { collectives: true } : {}),
        ...(request.collector ? { collector: request.collector } : {}),
        ...(request.oneNode ? { oneNode: true } : {}),
        jobId: request.jobId,
      },
      repetition: (i, run, progress) => {
        progress({ runId: run.id, phase: 'preparing', repetition: i, step: 0, samplesPerSec: null });
        return this.repetition(i, request, run, job, request.jobId, options, progress, nodes.open);
      },
      recorded: (launch) => ({ event: launch.rep, samplesPerSec: launch.rep.samplesPerSec }),
      summarize: async (run, reps) => {
        const result = this.summarize(request, run, reps);
        const c = result.target.collectives;
        if (!alone || !c) return result;
        const oneNodeSamplesPerSec = await this.aloneSamplesPerSec(request, alone.command, run, job);
        const scaling = { nodes: alone.nodes, oneNodeSamplesPerSec, efficiency: scalingEfficiency(result.samplesPerSecCi.median, oneNodeSamplesPerSec, alone.nodes) };
        return { ...result, target: { ...result.target, collectives: { ...c, scaling } } };
      },
      release: () => nodes.close(),
    };
  }

  /** The job launched once more on this node alone (its own collector, no other node told): its samples/s. */
  private async aloneSamplesPerSec(request: ScriptBenchmarkRequest, command: string[], run: RunRecord, job: RunningJob): Promise<number> {
    const log = run.stream('output-one-node.log');
    const trialOptions = { target: { ...request.target, command }, overrides: request.overrides, warmupSteps: request.warmupSteps, steps: request.steps, timeoutMs: request.timeoutSeconds * 1000, probeDir: this.pythonDir };
    try {
      const { record } = await launchMeasured({
        ...trialOptions,
        window: null,
        onStarted: (cancel) => this.jobs.started(job, cancel),
        onLine: (stream, line) => log.write(`${stream === 'stderr' ? 'E' : 'O'} ${line}\n`),
      });
      job.cancel = null;
      const error = trialError(record, trialOptions);
      if (error) throw new ApiError(error.code, `the job on this node alone (for --one-node): ${error.message}`);
      const ranks = record.connections.map((c) => summarizeRank(c, request.warmupSteps, request.steps)).filter((r): r is RankSummary => r !== null);
      if (ranks.length === 0) throw new ApiError('E_SCRIPT', 'the job on this node alone (for --one-node) measured no step after its warm-up');
      return combineRanks(ranks).samplesPerSec;
    } finally {
      await new Promise<void>((resolve) => log.end(resolve));
    }
  }

  private async repetition(
    i: number,
    request: ScriptBenchmarkRequest,
    run: RunRecord,
    job: RunningJob,
    jobId: string,
    options: { onOutput?: OnOutput },
    progress: (p: RepetitionProgress) => void,
    followers: () => Promise<Followers | undefined>,
  ) {
    const log = run.stream(`output-rep${i}.log`);
    // Progress at most ~10/s (steps of a small model come by the hundred), and the last step always said: a
    // step held back by the limit is sent when the limit allows, so a script that stalls shows where it is.
    let lastProgress = 0;
    let heldStep: ReturnType<typeof setTimeout> | null = null;
    let stopped = false;
    // A job of several ranks: who reported, from which node, at which step (the first RANKS_SHOWN of them).
    const heard = new Map<number, { rank: number; node: string | null; nodeRank: number | null; step: number }>();
    // Copies: an event sent is kept (replayed to a window that attaches) and must not change with the next step.
    const ranks = () => (heard.size > 1 ? { ranks: [...heard.values()].map((r) => ({ ...r })).sort((a, b) => a.rank - b.rank) } : {});
    const stepProgress = (step: number) => {
      if (heldStep) clearTimeout(heldStep);
      heldStep = null;
      if (stopped) return;
      const wait = lastProgress + 100 - Date.now();
      if (wait > 0) {
        heldStep = setTimeout(() => stepProgress(step), wait);
        return;
      }
      lastProgress = Date.now();
      progress({ runId: run.id, phase: step > request.warmupSteps ? 'measuring' : 'warmup', repetition: i, step, samplesPerSec: null, ...ranks() });
    };
    const trialOptions = {
      target: request.target,
      overrides: request.overrides,
      warmupSteps: request.warmupSteps,
      steps: request.steps,
      timeoutMs: request.timeoutSeconds * 1000,
      probeDir: this.pythonDir,
      measurePeak: true,
      timeCollectives: request.collectivesPerBucket ? ('bucket' as const) : request.collectives ? ('step' as const) : undefined,
      ...(request.collector ? { collector: request.collector, followers: await followers() } : {}),
    };
    try {
      const { record, telemetry: windowTelemetry, processTree } = await launchMeasured({
        ...trialOptions,
        window: { telemetry: this.telemetry, open: () => run.stream(`telemetry-rep${i}.jsonl`, { append: true }) },
        processTree: true,
        onStarted: (cancel) => this.jobs.started(job, cancel),
        onLine: (stream, line) => {
          log.write(`${stream === 'stderr' ? 'E' : 'O'} ${line}\n`);
          this.events.emit('script.output', { jobId, runId: run.id, repetition: i, stream, line });
          options.onOutput?.(stream, line, i);
        },
        onMessage: (connection, m) => {
          // The probe ends the launch after its measured steps: said at once, so the output stopping mid-epoch does not read as a crash.
          if (m.type === 'done' && m.reason === 'steps' && connection.hello.rank === 0) {
            stopped = true;
            if (heldStep) clearTimeout(heldStep);
            progress({ runId: run.id, phase: 'stopping', repetition: i, step: m.steps, samplesPerSec: null });
          }
          if (m.type !== 'step') return;
          run.appendEvent({ ...m, type: 'script.step', repetition: i, rank: connection.hello.rank });
          const { rank, node, nodeRank } = connection.hello;
          const known = heard.get(rank);
          if (known) known.step = m.step;
          else if (heard.size < RANKS_SHOWN) heard.set(rank, { rank, node: node ?? null, nodeRank: nodeRank ?? null, step: m.step });
          // A rank heard for the first time is said at once, past the rate limit: a node that joins shows now.
          if (connection.hello.rank === 0 || (!known && heard.has(rank))) {
            if (!known) lastProgress = 0;
            stepProgress(heard.get(0)?.step ?? m.step);
          }
        },
      });
      stopped = true;
      if (heldStep) clearTimeout(heldStep);
      job.cancel = null;
      const telemetry = windowTelemetry ?? mergeTelemetry([]);
      const error = trialError(record, trialOptions);
      if (error) throw error;
      const ranks = record.connections.map((c) => summarizeRank(c, request.warmupSteps, request.steps)).filter((r): r is RankSummary => r !== null);
      if (ranks.length === 0) {
        const seen = Math.max(0, ...record.connections.map((c) => c.messages.filter((m) => m.type === 'step').length));
        throw new ApiError('E_SCRIPT', `launch ${i}: the script ended after ${seen} optimizer step(s), all of them warm-up (${request.warmupSteps}): lower the warm-up steps or let it train longer`);
      }
      const combined = combineRanks(ranks);
      const ended: ScriptRepetition['target']['ended'] = record.connections.every((c) => c.messages.some((m) => m.type === 'done' && m.reason === 'steps')) ? 'steps' : 'exit';
      const applied = record.connections.flatMap((c) =>
        c.messages.flatMap((m) => (m.type === 'applied' ? [{ key: m.key, value: m.value, where: m.where, rank: c.hello.rank }] : [])),
      );
      const rep: ScriptRepetition = {
        repetition: i,
        samplesPerSec: combined.samplesPerSec,
        steadyStateMeanMs: combined.steadyStateMeanMs,
        wallClockMeanMs: combined.wallClockMeanMs,
        phasesMs: combined.phasesMs,
        namedPhasesExceedStepMs: combined.namedPhasesExceedStepMs,
        telemetry,
        target: { kind: 'script', ranks: ranks.map((r) => r.rank).sort((a, b) => a.rank - b.rank), ended, exitCode: record.outcome.exitCode, seconds: record.seconds, processTree },
      };
      const rank0 = (record.connections.find((c) => c.hello.rank === 0) ?? record.connections[0])?.messages ?? [];
      const counted = rank0.find((m) => m.type === 'flops');
      const measured = rank0.find((m) => m.type === 'peak');
      const copied = rank0.find((m) => m.type === 'copy');
      const flops =
        counted?.type === 'flops' ? { forwardPerSample: counted.forwardPerSample, recomputePerSample: counted.recomputePerSample ?? null, layers: counted.layers, method: counted.method } : null;
      const peak = measured?.type === 'peak' ? { gflops: measured.gflops, shape: measured.shape, how: measured.how, precision: measured.precision ?? 'fp32' } : null;
      const collectives = rankCollectives(record.connections, request.warmupSteps, request.steps);
      return { rep, ranks, applied, flops, peak, copy: copied?.type === 'copy' ? copied : null, collectives };
    } finally {
      stopped = true;
      if (heldStep) clearTimeout(heldStep);
      await new Promise<void>((resolve) => log.end(resolve));
    }
  }

  private summarize(request: ScriptBenchmarkRequest, run: RunRecord, reps: Launch[]): ScriptBenchmarkResult {
    const r = reps.map((x) => x.rep);
    const steady = mean(r.map((x) => x.steadyStateMeanMs));
    const wall = mean(r.map((x) => x.wallClockMeanMs));
    const named = { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0 };
    for (const k of Object.keys(named) as (keyof typeof named)[]) named[k] = mean(r.map((x) => x.phasesMs[k]));
    const { phases, exceedsMs } = withOther(named, steady);
    const last = reps[reps.length - 1];
    const lastRanks = last.rep.target.ranks;
    const slowest = combineRanks(last.ranks).slowestDataWait;
    const measuredSteps = Math.min(...r.flatMap((x) => x.target.ranks.map((k) => k.measuredSteps)));
    const first = lastRanks[0];
    const aggregate: BenchmarkAggregate = {
      samplesPerSecCi: medianInterval(r.map((x) => x.samplesPerSec)),
      steadyStateMeanMs: steady,
      wallClockMeanMs: wall,
      predictedEpochSeconds: { fromSteadyState: 0, fromWallClock: 0 },
      phasesMs: phases,
      phasesPercent: phaseShares(phases),
      namedPhasesExceedStepMs: exceedsMs,
      telemetry: mergeTelemetry(r.map((x) => x.telemetry)),
    };
    const device = first.device;
    const peak = Math.max(0, ...lastRanks.map((k) => k.cudaPeakBytes ?? 0));
    // The engine's warm-up finding speaks of epoch estimates, which a script has none of.
    const found: Finding[] = findings({ aggregate, device, repeat: request.repeat, measuredBytes: peak, deviceTotalBytes: first.cudaTotalBytes }).filter(
      (f) => f.measurement.name !== 'stepTime.wallClockToSteadyRatio',
    );
    if (request.steps !== undefined && measuredSteps < request.steps) {
      found.push({
        severity: 'warning',
        text: `The script ended on its own after ${measuredSteps} measured step(s), fewer than the ${request.steps} asked for: the figures rest on fewer steps.`,
        measurement: { name: 'steps', value: measuredSteps, unit: 'steps' },
      });
    }
    const { flops, utilisation } = scriptUtilisation(reps, aggregate.samplesPerSecCi.median, device, aggregate.telemetry.gpu);
    const result = {
      runId: run.id,
      runDir: run.relativeDir,
      title: commandText(request.target),
      device,
      batchSize: first.batchSize,
      warmupSteps: request.warmupSteps,
      steps: measuredSteps,
      repeat: request.repeat,
      samplesPerSec: aggregate.samplesPerSecCi.median,
      samplesPerSecCi: aggregate.samplesPerSecCi,
      stepTime: {
        steadyStateMeanMs: steady,
        wallClockMeanMs: wall,
        note: `steadyStateMeanMs: the measured steps after ${request.warmupSteps} warm-up steps (the slowest rank's); wallClockMeanMs: every step, warm-up included (mean over ${request.repeat} launch(es)); a step runs from one optimizer step's end to the next's`,
      },
      phasesMs: phases,
      phasesPercent: aggregate.phasesPercent,
      namedPhasesExceedStepMs: exceedsMs,
      telemetry: aggregate.telemetry,
      findings: found,
      repetitions: r,
      ...(utilisation ? { utilisation } : {}),
      ...(({ energy, missing }) => ({ energy, energyMissing: missing }))(
        device.startsWith('cuda') ? energyPerSample(aggregate.telemetry, aggregate.samplesPerSecCi.median) : { energy: null, missing: CPU_ENERGY_MISSING },
      ),
      target: {
        kind: 'script',
        command: request.target,
        overrides: request.overrides,
        applied: last.applied,
        worldSize: lastRanks.length,
        phaseNote: `data: time blocked in the DataLoader's next(); forward and loss: outermost module calls (loss modules apart); backward: autograd.backward; optimizer: step(); timed with ${first.timing === 'cuda-events' ? 'CUDA events on the current stream' : 'the host clock'}. Host-to-device copies are not separated: they are in 'other'.`,
        dataWait: slowest,
        ranks: lastRanks,
        ...(last.collectives ? { collectives: last.collectives } : {}),
        memory: {
          device,
          cudaPeakBytes: lastRanks.some((k) => k.cudaPeakBytes !== null) ? peak : null,
          cudaTotalBytes: first.cudaTotalBytes,
          hostPeakRssBytes: Math.max(0, ...lastRanks.map((k) => k.hostPeakRssBytes ?? 0)) || null,
        },
        flops,
        floors: floorsOf(reps, steady, first, device),
      },
    };
    const parsed = BenchmarkResultSchema.safeParse(result);
    if (!parsed.success) throw new ApiError('E_INTERNAL', `the script benchmark result does not match the contract: ${formatIssues(parsed.error, 'result')}`);
    if (!isScriptBenchmark(parsed.data)) throw new ApiError('E_INTERNAL', 'the script benchmark made a result of another target');
    return parsed.data;
  }
}

/**
 * The model-FLOPs utilisation of a script (issue 26): the probe's count of its Linear and Conv forward FLOPs
 * (an estimate), three times for training, against torch's own best matmul rate on the device, measured in the
 * launches after their measured steps (the best of them), and the datasheet's for a GPU in the table.
 */
export function scriptUtilisation(reps: readonly Pick<Launch, 'flops' | 'peak'>[], samplesPerSec: number, device: string, gpuName: string): { flops: ScriptFlops | null; utilisation?: Utilisation } {
  const flops = reps.find((x) => x.flops)?.flops ?? null;
  if (!flops) return { flops: null };
  if (flops.forwardPerSample === null || flops.forwardPerSample === 0) return { flops };
  const peak = bestPeak(reps);
  const cuda = device.startsWith('cuda');
  const utilisation = utilisationOf({
    flopsPerSample: flops.forwardPerSample,
    samplesPerSec,
    peak,
    peakMissing: PEAK_MISSING,
    deviceName: cuda ? gpuName : 'cpu',
    cuda,
    // The datasheet figure of the precision torch's fp32 matmuls ran in: TF32 (matmul.precision high) is not fp32.
    precision: peak?.precision ?? 'fp32',
  });
  return { flops, utilisation };
}

const PEAK_MISSING = 'the probe measured no matmul rate (the script ended before its measured steps did)';

/** The best matmul rate the launches measured (clocks vary between launches; the peak is the best the device did). */
function bestPeak(reps: readonly Pick<Launch, 'peak'>[]): ScriptPeak | null {
  const peaks = reps.map((x) => x.peak).filter((p): p is ScriptPeak => p !== null);
  return peaks.length ? peaks.reduce((a, b) => (b.gflops > a.gflops ? b : a)) : null;
}

/** Compute, copy and data floors per step (issue 26 item 3) from what the probe measured after the measured steps. */
function floorsOf(reps: Launch[], stepMs: number, rank: Pick<ScriptRank, 'batchSize' | 'samplesPerStep' | 'batchesPerStep'>, device: string) {
  const flops = reps.find((x) => x.flops)?.flops ?? null;
  const copies = reps.map((x) => x.copy).filter((c): c is NonNullable<Launch['copy']> => c !== null);
  const timed = copies.filter((c) => c.seconds !== null && c.bytesPerBatch > 0);
  const best = timed.length ? timed.reduce((a, b) => ((b.seconds ?? Infinity) < (a.seconds ?? Infinity) ? b : a)) : null;
  const copyMissing = !device.startsWith('cuda')
    ? CPU_COPY_MISSING
    : copies.length
      ? copies[0].how.replace(/^not measured: /, '')
      : 'the probe timed no copy (the script ended before its measured steps did, or the copy failed: see the launch output)';
  return scriptFloors({
    stepMs,
    // Per optimizer step (issue 38): with accumulation every micro-batch's arithmetic and copy are in it.
    samplesPerStep: rank.samplesPerStep ?? rank.batchSize,
    batchesPerStep: rank.batchesPerStep ?? 1,
    forwardFlopsPerSample: flops?.forwardPerSample || null,
    flopsMissing:
      flops?.forwardPerSample === null
        ? flops.method.replace(/^not counted: /, '')
        : 'the probe counted no FLOPs (no Linear or Conv layer ran in a training forward)',
    peak: bestPeak(reps),
    peakMissing: PEAK_MISSING,
    copy: best && best.seconds !== null ? { bytesPerBatch: best.bytesPerBatch, seconds: best.seconds, how: best.how } : null,
    copyMissing,
  });
}
