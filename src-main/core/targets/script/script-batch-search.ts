import { ApiError } from '../../../api/errors';
import type { BatchTrial } from '../../../api/batch-size';
import { BatchSearchResultSchema } from '../../../api/batch-size';
import type { ScriptBatchSearchRequest } from '../../../api/script-target';
import type { EventHub } from '../../common/event-hub';
import type { RunRecord } from '../../workspace/run-store';
import { probeDir, requireAbsoluteCwd } from '../../script/launcher';
import type { RankSummary } from '../../script/rank-stats';
import { combineRanks, summarizeRank } from '../../script/rank-stats';
import { commandText } from './script-benchmark';
import type { RunningJob, RunningJobs } from '../../jobs/running-jobs';
import type { BatchPlan, OnOutput } from '../target-runner';
import type { TrialRecord } from '../../script/measured-launch';
import { trialError, trialOom } from '../../script/measured-launch';
import { launchMeasured } from '../../script/measured-launch';

const n = (x: number) => Math.round(x).toLocaleString('en-US');

/**
 * The batch-size search's script side (the one loop is core/batch-size/search-loop.ts, the engine's too: powers
 * of two up to the first failure, then bisection): each trial is a launch with dataloader.batch_size set,
 * stopped after a few steps. There is no memory model for a script, so the search starts at startBatch.
 */
export function scriptBatchPlan(
  request: ScriptBatchSearchRequest & { jobId: string },
  job: RunningJob,
  deps: { jobs: RunningJobs; events: EventHub },
  options: { onTrial?: (trial: BatchTrial) => void; onOutput?: OnOutput },
): BatchPlan {
  if (request.overrides['dataloader.batch_size'] !== undefined) {
    throw new ApiError('E_BAD_INPUT', 'dataloader.batch_size is what find-batch-size varies: leave it out of the overrides');
  }
  requireAbsoluteCwd(request.target);
  const dir = probeDir();
  let device = 'cpu';
  let total: number | null = null;
  // Every trial's output, prefixed with its batch, beside run.json: the live view shows only the last lines.
  let log: ReturnType<RunRecord['stream']> | null = null;
  return {
    config: {
      target: request.target,
      overrides: request.overrides,
      startBatch: request.startBatch,
      maxBatch: request.maxBatch,
      warmupSteps: request.warmupSteps,
      stepsPerTrial: request.stepsPerTrial,
      jobId: job.id,
    },
    // No memory model for a script: the search is seeded with the start batch.
    seed: request.startBatch,
    maxBatch: request.maxBatch,
    trial: async (b, run, finished) => {
      log ??= run.stream('output.log');
      const out = log;
      const trialOptions = {
        target: request.target,
        overrides: { ...request.overrides, 'dataloader.batch_size': b },
        warmupSteps: request.warmupSteps,
        steps: request.stepsPerTrial,
        timeoutMs: request.timeoutSeconds * 1000,
        probeDir: dir,
      };
      const repetition = finished + 1;
      // A trial is a data point, not a measured window: no telemetry.
      const { record } = await launchMeasured({
        ...trialOptions,
        window: null,
        onStarted: (cancel) => deps.jobs.started(job, cancel),
        onLine: (stream, line) => {
          out.write(`${b} ${stream === 'stderr' ? 'E' : 'O'} ${line}\n`);
          deps.events.emit('script.output', { jobId: job.id, runId: run.id, repetition, stream, line });
          options.onOutput?.(stream, line, repetition);
        },
      });
      job.cancel = null;
      // A cancel explains whatever the killed trial looked like (an exit code, even an OOM it raised on the way down).
      if (job.cancelled || record.outcome.cancelled) {
        throw new ApiError('E_CANCELLED', `the batch-size search was cancelled during the trial at batch ${b}, after ${finished} finished trial(s); its process group was killed`);
      }
      const judged = judgeTrial(finished, b, record, request, trialOptions);
      if (judged.measured) ({ device, cudaTotalBytes: total } = judged.measured);
      run.appendEvent({ type: 'trial', ...judged.trial });
      deps.events.emit('batchSize.trial', { jobId: job.id, runId: run.id, trial: judged.trial });
      options.onTrial?.(judged.trial);
      return judged.trial;
    },
    result: async (run, search, seconds) => {
      const trials = search.trials;
      const { largestFitting, recommended } = search;
      const firstFailure = trials.filter((t) => !t.fits && (largestFitting === null || t.batchSize > largestFitting)).sort((a, b) => a.batchSize - b.batchSize)[0];
      const verdict =
        largestFitting === null
          ? `no batch trained: even batch ${n(Math.min(...trials.map((t) => t.batchSize)))} failed (${trials[0]?.message ?? 'no trial ran'})`
          : `batch ${n(largestFitting)} is the largest that fits${firstFailure ? ` (${n(firstFailure.batchSize)}: ${firstFailure.outcome === 'ok' ? 'over the headroom' : firstFailure.outcome})` : search.cancelled ? '' : ` (the search stopped at the maximum, ${n(request.maxBatch)})`}; fastest: ${n(recommended ?? largestFitting)}`;
      return BatchSearchResultSchema.parse({
        runId: run.id,
        runDir: run.relativeDir,
        title: commandText(request.target),
        device,
        capacityBytes: total,
        headroom: request.headroom,
        largestFitting,
        recommended,
        trials,
        verdict,
        seconds,
        target: { kind: 'script' },
      });
    },
    close: () => (log ? new Promise<void>((resolve) => log!.end(resolve)) : Promise.resolve()),
  };
}

/** What one finished trial says about batch b: a data point (ok, E_OOM, crash), or an error that ends the search. */
function judgeTrial(
  index: number,
  b: number,
  record: TrialRecord,
  request: ScriptBatchSearchRequest,
  trialOptions: Parameters<typeof trialError>[1],
): { trial: BatchTrial; measured: { device: string; cudaTotalBytes: number | null } | null } {
  const common = { index, batchSize: b, accumulation: 1, seconds: record.seconds, target: { kind: 'script' as const } };
  const oom = trialOom(record);
  if (oom) return { trial: { ...common, outcome: 'E_OOM', samplesPerSec: null, peakBytes: null, fits: false, message: oom.message.split('\n')[0] }, measured: null };
  if (record.outcome.signal === 'SIGKILL' && !record.outcome.timedOut) {
    const message = 'killed by SIGKILL (the kernel may have run out of memory)';
    return { trial: { ...common, outcome: 'crash', samplesPerSec: null, peakBytes: null, fits: false, message }, measured: null };
  }
  const error = trialError(record, trialOptions);
  if (error) throw error;
  const ranks = record.connections.map((c) => summarizeRank(c, request.warmupSteps, request.stepsPerTrial)).filter((r): r is RankSummary => r !== null);
  if (ranks.length === 0) throw new ApiError('E_SCRIPT', `the trial at batch ${b} measured no step after the ${request.warmupSteps} warm-up step(s): the script ended too early`);
  const got = ranks[0].rank.batchSize;
  if (got !== null && got !== b) {
    throw new ApiError('E_BAD_INPUT', `the trial asked for batch ${b} but the batches had ${got} samples: the script's loader does not take dataloader.batch_size as its batch`);
  }
  const total = ranks[0].rank.cudaTotalBytes;
  const peak = ranks[0].rank.cudaPeakBytes;
  const fits = peak === null || total === null ? true : peak <= total * (1 - request.headroom);
  return {
    trial: { ...common, outcome: 'ok', samplesPerSec: combineRanks(ranks).samplesPerSec, peakBytes: peak, fits, message: null },
    measured: { device: ranks[0].rank.device, cudaTotalBytes: total },
  };
}
