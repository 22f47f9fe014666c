import path from 'node:path';

import { ApiError } from '../../../api/errors';
import { formatIssues } from '../../../api/format-issues';
import type { ScriptTrainRequest } from '../../../api/script-target';
import type { ScriptProgressEvent, ScriptRunPoint, ScriptTrainRun } from '../../../api/train-result';
import { TrainRunResultSchema, isScriptTrainRun } from '../../../api/train-result';
import type { TelemetrySummary } from '../../../api/telemetry';
import { mergeTelemetry, withOther } from '../../stats/benchmark-summary';
import type { EventHub } from '../../common/event-hub';
import { EvenThinner } from '../../workspace/jsonl-lines';
import type { RunRecord } from '../../workspace/run-store';
import { createRun } from '../../workspace/run-store';
import type { TelemetryService } from '../../telemetry/telemetry-service';
import type { Workspace } from '../../workspace/workspace';
import { probeDir, requireAbsoluteCwd } from '../../script/launcher';
import type { ProbeConnection } from '../../script/probe-channel';
import type { ProbeDone } from '../../script/probe-messages';
import type { ProcessTreeSummary } from '../../telemetry/process-group';
import { LossTally, RankTally } from '../../script/rank-stats';
import { commandText } from './script-benchmark';
import { closedToCancel, type RunningJob, type RunningJobs } from '../../jobs/running-jobs';
import type { TrainOptions } from '../target-runner';
import type { TrialRecord } from '../../script/measured-launch';
import { trialError } from '../../script/measured-launch';
import { launchMeasured } from '../../script/measured-launch';

/** Progress events at most this often (docs/architecture.md: throttled; a small model steps by the thousand per second). */
const PROGRESS_INTERVAL_MS = 100;
/** The engine's training runs record telemetry at this period too. */
const TELEMETRY_INTERVAL_MS = 500;
const OUTPUT_TAIL_LINES = 200;
const MAX_SERIES_POINTS = 2000;

/** Everything one run follows live: per-rank sums, rank 0's losses, the curves, the output's tail. */
class RunFollower {
  readonly ranks = new Map<ProbeConnection, RankTally>();
  readonly losses = new LossTally();
  readonly series = new EvenThinner<ScriptRunPoint>(MAX_SERIES_POINTS);
  readonly lossCurve = new EvenThinner<[number, number]>(MAX_SERIES_POINTS);
  readonly tail: { stream: 'stdout' | 'stderr'; line: string }[] = [];
  lines = 0;
  private lastEmit = 0;

  constructor(
    private readonly warmupSteps: number,
    private readonly emit: (point: ScriptRunPoint) => void,
  ) {}

  tally(c: ProbeConnection): RankTally {
    let t = this.ranks.get(c);
    if (!t) this.ranks.set(c, (t = new RankTally(c.hello.rank, this.warmupSteps)));
    return t;
  }

  /** Rank 0 (the first to connect when no rank calls itself 0). */
  lead(): RankTally | null {
    const all = [...this.ranks.values()];
    return all.find((t) => t.rank === 0) ?? all[0] ?? null;
  }

  output(stream: 'stdout' | 'stderr', line: string): void {
    this.lines++;
    this.tail.push({ stream, line });
    if (this.tail.length > OUTPUT_TAIL_LINES) this.tail.shift();
  }

  /** A point when one is due (or `force`d at the end): the windows since the last one, over all ranks. */
  maybePoint(force = false): void {
    const now = Date.now();
    if (!force && now - this.lastEmit < PROGRESS_INTERVAL_MS) return;
    const lead = this.lead();
    if (!lead) return;
    this.lastEmit = now;
    const windows = [...this.ranks.values()].map((t) => t.takeWindow());
    const rates = windows.map((w) => w.samplesPerSec).filter((x): x is number => x !== null);
    const waits = windows.map((w) => w.dataWaitPercent).filter((x): x is number => x !== null);
    if (!force && waits.length === 0 && !this.losses.pending()) return;
    const point: ScriptRunPoint = {
      t: now,
      step: lead.steps,
      samplesPerSec: rates.length ? rates.reduce((s, x) => s + x, 0) : null,
      dataWaitPercent: waits.length ? Math.max(...waits) : null,
      ...this.losses.take(),
    };
    this.series.push(() => point);
    this.emit(point);
  }
}

/**
 * A whole training run of the user's command with the probe, recorded like an engine training run (kind 'train',
 * config.target the script, the run's id the job's): step and loss events in events.jsonl, telemetry.jsonl, the
 * output in output.log, progress as `script.progress`, the output live as `script.output`. The run is recorded
 * however it ends, with what it measured until then.
 */
export class ScriptTraining {
  constructor(
    private readonly events: EventHub,
    private readonly workspace: Workspace,
    private readonly telemetry: TelemetryService,
    private readonly jobs: RunningJobs,
    private readonly pythonDir: string = probeDir(),
  ) {}

  async run(request: ScriptTrainRequest & { jobId: string }, job: RunningJob, options: TrainOptions): Promise<ScriptTrainRun> {
    requireAbsoluteCwd(request.target);
    const run = await createRun(
      this.workspace,
      'train',
      {
        target: request.target,
        overrides: request.overrides,
        ...(request.maxSteps !== undefined ? { maxSteps: request.maxSteps } : {}),
        warmupSteps: request.warmupSteps,
        timeoutSeconds: request.timeoutSeconds,
      },
      { id: request.jobId },
    );
    return this.train(request, run, job, options);
  }

  private async train(request: ScriptTrainRequest, run: RunRecord, job: RunningJob, options: TrainOptions): Promise<ScriptTrainRun> {
    const t0 = Date.now();
    const log = run.stream('output.log');
    const maxSteps = request.maxSteps ?? null;
    const follower = new RunFollower(request.warmupSteps, (point) => {
      const progress: ScriptProgressEvent = { ...point, jobId: run.id, maxSteps, elapsedSeconds: (Date.now() - t0) / 1000 };
      this.events.emit('script.progress', progress);
      options.onProgress?.(progress);
    });
    const trialOptions = { target: request.target, overrides: request.overrides, timeoutMs: request.timeoutSeconds * 1000 };
    let record: TrialRecord;
    let processTree: ProcessTreeSummary | null;
    let telemetry: TelemetrySummary;
    let lateCancel: boolean;
    try {
      let windowTelemetry: TelemetrySummary | null;
      ({ record, telemetry: windowTelemetry, processTree } = await launchMeasured({
        ...trialOptions,
        // A training run's telemetry covers the whole run, its exit included.
        window: { telemetry: this.telemetry, open: () => run.stream('telemetry.jsonl', { append: true }), periodMs: TELEMETRY_INTERVAL_MS, whole: true },
        processTree: true,
        // The probe's warm-up only delays its stop; warmupSteps is ours, for the steady-state figures.
        warmupSteps: 0,
        steps: request.maxSteps,
        probeDir: this.pythonDir,
        retainSteps: 'last',
        onStarted: (cancel) => this.jobs.started(job, cancel),
        onLine: (stream, line) => {
          log.write(`${stream === 'stderr' ? 'E' : 'O'} ${line}\n`);
          follower.output(stream, line);
          this.events.emit('script.output', { jobId: run.id, runId: run.id, repetition: 1, stream, line });
          options.onOutput?.(stream, line, 1);
        },
        onMessage: (connection, m) => {
          const rank = connection.hello.rank;
          if (m.type === 'step') {
            follower.tally(connection).step(m);
            run.appendEvent({ ...m, type: 'script.step', rank, t: Date.now() });
            follower.maybePoint();
          } else if (m.type === 'phases') {
            follower.tally(connection).phases(m);
            run.appendEvent({ ...m, type: 'script.phases', rank });
          } else if (m.type === 'loss') {
            run.appendEvent({ ...m, type: 'script.loss', rank });
            if (follower.tally(connection) === follower.lead()) {
              follower.losses.add(m.steps, m.values);
              m.steps.forEach((step, i) => {
                const value = m.values[i];
                if (value !== null && Number.isFinite(value)) follower.lossCurve.push(() => [step, value]);
              });
            }
          } else if (m.type === 'lossOff' && follower.tally(connection) === follower.lead()) {
            follower.losses.off = m.reason;
          }
        },
      }));
      // A cancel after the script ended stopped nothing: honoured below, and none is taken after this.
      lateCancel = closedToCancel(job);
      telemetry = windowTelemetry ?? mergeTelemetry([]);
    } catch (err) {
      throw await run.fail(err);
    } finally {
      job.cancel = null;
      await new Promise<void>((resolve) => log.end(resolve));
    }
    follower.maybePoint(true);
    const error = trialError(record, trialOptions) ?? (lateCancel ? new ApiError('E_CANCELLED', `run ${run.id} was cancelled after the script ended, before its result was recorded`) : null);
    let result: ScriptTrainRun;
    try {
      result = this.summarize(request, run, record, follower, error, { processTree, telemetry, seconds: (Date.now() - t0) / 1000 });
    } catch (err) {
      throw await run.fail(err);
    }
    if (error) {
      await run.finish(error.code === 'E_CANCELLED' ? 'cancelled' : 'failed', { result, error: error.toPayload() });
      throw error;
    }
    await run.finish('completed', { result });
    return result;
  }

  private summarize(
    request: ScriptTrainRequest,
    run: RunRecord,
    record: TrialRecord,
    follower: RunFollower,
    error: ApiError | null,
    extra: { processTree: ProcessTreeSummary | null; telemetry: TelemetrySummary; seconds: number },
  ): ScriptTrainRun {
    const tallies = [...follower.ranks.values()];
    const lead = follower.lead();
    const measured = tallies.filter((t) => t.measured.n > 0);
    const slowest = measured.reduce<RankTally | null>((a, b) => (!a || b.measured.ms / b.measured.n > a.measured.ms / a.measured.n ? b : a), null);
    const steady = slowest ? slowest.measured.ms / slowest.measured.n : null;
    const leadConnection = record.connections.find((c) => follower.ranks.get(c) === lead);
    const done = leadConnection?.messages.find((m): m is ProbeDone => m.type === 'done');
    let phasesMs: ScriptTrainRun['phasesMs'] = null;
    if (lead && lead.measured.n > 0) {
      const n = lead.measured.n;
      const p = lead.measured.phasesMs;
      const named = { data: lead.measured.dataMs / n, h2d: 0, forward: p.forward / n, loss: p.loss / n, backward: p.backward / n, optimizer: p.optimizer / n };
      phasesMs = withOther(named, lead.measured.ms / n).phases;
    }
    const waits = measured.map((t) => ({ msPerStep: t.measured.dataMs / t.measured.n, percent: t.measured.ms > 0 ? (100 * t.measured.dataMs) / t.measured.ms : 0 }));
    const stoppedByProbe = record.connections.length > 0 && record.connections.every((c) => c.messages.some((m) => m.type === 'done' && m.reason === 'steps'));
    const lossNote = follower.losses.off
      ? `the probe stopped reading the loss: ${follower.losses.off}`
      : follower.losses.last === null && (lead?.steps ?? 0) > 0
        ? 'no loss was read: the script passes no single floating-point scalar to backward()'
        : null;
    const result: ScriptTrainRun = {
      runId: run.id,
      runDir: run.relativeDir,
      title: commandText(request.target),
      device: done?.memory.device ?? 'unknown',
      batchSize: lead?.batchSize ?? null,
      steps: lead?.steps ?? 0,
      seconds: extra.seconds,
      // No rate for a script whose steps carried no DataLoader batch: 0 samples/s would read as a stall.
      ...(measured.some((t) => t.measured.samples > 0)
        ? { samplesPerSec: measured.reduce((s, t) => s + (t.measured.ms > 0 ? (1000 * t.measured.samples) / t.measured.ms : 0), 0) }
        : {}),
      stepTime: {
        steadyStateMeanMs: steady,
        wallClockMeanMs: tallies.length ? Math.max(...tallies.map((t) => (t.steps > 0 ? t.allMs / t.steps : 0))) : null,
        warmupSteps: request.warmupSteps,
        note: `steadyStateMeanMs: the steps after the first ${request.warmupSteps} (the slowest rank's); wallClockMeanMs: every step; a step runs from one optimizer step's end to the next's`,
      },
      phasesMs,
      telemetry: extra.telemetry,
      target: {
        kind: 'script',
        command: request.target,
        overrides: request.overrides,
        applied: record.connections.flatMap((c) => c.messages.flatMap((m) => (m.type === 'applied' ? [{ key: m.key, value: m.value, where: m.where, rank: c.hello.rank }] : []))),
        ended: error ? 'error' : stoppedByProbe ? 'maxSteps' : 'exit',
        exitCode: record.outcome.exitCode,
        signal: record.outcome.signal,
        worldSize: record.connections.length,
        timing: lead?.timing ?? 'host-clock',
        dataWait: waits.length ? waits.reduce((a, b) => (b.percent > a.percent ? b : a)) : null,
        lastLoss: follower.losses.last,
        lossNote,
        peakMemory: {
          cudaPeakBytes: done?.memory.cudaPeakBytes ?? null,
          cudaTotalBytes: done?.memory.cudaTotalBytes ?? null,
          hostPeakRssBytes: done?.memory.hostPeakRssBytes ?? null,
        },
        processTree: extra.processTree,
        series: follower.series.result(),
        lossCurve: follower.lossCurve.result(),
        output: { file: path.join(run.relativeDir, 'output.log'), lines: follower.lines, tail: follower.tail },
      },
    };
    const parsed = TrainRunResultSchema.safeParse(result);
    if (!parsed.success || !isScriptTrainRun(parsed.data)) {
      throw new ApiError('E_INTERNAL', `the script run's result does not match the contract: ${parsed.success ? 'not a script run' : formatIssues(parsed.error, 'result')}`);
    }
    return parsed.data;
  }
}
