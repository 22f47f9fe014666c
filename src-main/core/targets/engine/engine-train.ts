import path from 'node:path';

import { ApiError } from '../../../api/errors';
import { formatIssues } from '../../../api/format-issues';
import type { TrainPreparingEvent, TrainRequest } from '../../../api/training';
import { EngineTrainSummarySchema, TrainEventSchema, type EngineTrainSummary } from '../../../api/training';
import type { TelemetrySummary } from '../../../api/telemetry';
import type { EngineTrainRun } from '../../../api/train-result';
import type { EngineClient } from '../../../engine/engine-client';
import type { HostTrainData } from '../../../engine/host-protocol';
import type { DatasetService } from '../../datasets/dataset-service';
import type { EventHub } from '../../common/event-hub';
import type { TelemetryService } from '../../telemetry/telemetry-service';
import { describeComputeDevice } from '../../common/compute-device';
import { createRun } from '../../workspace/run-store';
import { closedToCancel, type RunningJob } from '../../jobs/running-jobs';
import type { TrainOptions } from '../target-runner';
import { checkAborted } from '../../datasets/importers/record-source';
import type { Workspace } from '../../workspace/workspace';
import { writtenByAnotherProcess } from '../../workspace/workspace-files';

/** What the engine's training needs of the workbench. */
export interface EngineTrainDeps {
  engine: EngineClient;
  events: EventHub;
  workspace: Workspace;
  datasets: DatasetService;
  telemetry: TelemetryService;
}

/**
 * A training run of our engine: its data cached (or read) first, the request checked by the engine, then the
 * run recorded under runs/<job id> with its step events, telemetry and checkpoint. Cancelled while its data is
 * prepared, it is recorded as cancelled (people look for it); a request the engine refuses leaves no run.
 */
export async function trainEngine(deps: EngineTrainDeps, request: TrainRequest & { jobId: string }, job: RunningJob, options: TrainOptions): Promise<EngineTrainRun> {
  const runId = request.jobId;
  const preparing = new AbortController();
  job.cancel = () => preparing.abort();
  const announce = (stage: TrainPreparingEvent['stage'], fraction: number | null) => deps.events.emit('train.preparing', { jobId: runId, stage, fraction });
  let data: HostTrainData;
  try {
    data = await deps.datasets.trainingData(request.data, {
      allowPathsOutsideWorkspace: options.allowPathsOutsideWorkspace,
      signal: preparing.signal,
      onProgress: (p) => announce(p.phase, p.recordsTotal > 0 ? Math.min(1, p.records / p.recordsTotal) : null),
    });
    checkAborted(preparing.signal);
    announce('checking', null);
    // A request the engine refuses (no such device, bf16 on the CPU, a batch larger than the data ...)
    // is refused here, before a run exists: a run folder means the engine accepted the request.
    await deps.engine.checkTraining({ spec: request.spec, data, options: request.options });
    checkAborted(preparing.signal);
  } catch (err) {
    // A cancelled run is recorded as cancelled (people look for it), unlike a refused request.
    if (preparing.signal.aborted || job.cancelled) throw await recordCancelledBeforeStart(deps.workspace, request, runId);
    throw err;
  }
  const run = await createRun(deps.workspace, 'train', { ...request, cachedData: data }, { id: runId, computeDevice: describeComputeDevice(await deps.engine.devices(), request.options.device) });
  job.cancel = () => deps.engine.cancelTraining(run.id);
  // A cancel while the run was being recorded: the engine has no trainer of this id to stop yet.
  if (job.cancelled) throw await run.fail(new ApiError('E_CANCELLED', `run ${run.id} was cancelled before its first step`));
  const recording = deps.telemetry.record(run.stream('telemetry.jsonl', { append: true }));
  let stopped = false;
  const stopRecording = () => {
    stopped = true;
    return recording.stop();
  };
  try {
    // The engine saves its checkpoint by name: it gets a private one, copied into the run folder held open.
    const raw = await writtenByAnotherProcess(deps.workspace, path.join(run.relativeDir, 'checkpoint.safetensors'), async (checkpointPath) => {
      const summary = await deps.engine.train({ runId: run.id, spec: request.spec, data, options: request.options, checkpointPath }, (rawEvent) => {
        // Stamped on arrival, so curves can use a time axis (the engine's clock is per step, not wall-clock).
        const parsed = TrainEventSchema.safeParse({ ...(rawEvent as object), t: Date.now() });
        if (!parsed.success) return; // an engine newer than this contract; the run.json still gets the result
        run.appendEvent(parsed.data);
        deps.events.emit('train.progress', { jobId: run.id, event: parsed.data });
        options.onEvent?.(parsed.data);
      });
      // A cancel that reached the engine after its last step stopped nothing: honoured here, and none is taken after.
      if (closedToCancel(job)) throw new ApiError('E_CANCELLED', `run ${run.id} was cancelled after its last step, before its result was recorded`);
      return summary;
    });
    const telemetry = await stopRecording();
    const parsed = EngineTrainSummarySchema.safeParse(raw);
    if (!parsed.success) {
      throw new ApiError('E_INTERNAL', `the engine's training summary does not match the contract: ${formatIssues(parsed.error, 'result')}`);
    }
    const result = trainRunOf(parsed.data, { runId: run.id, runDir: run.relativeDir, data: data.description, batchSize: request.options.batchSize, telemetry });
    await run.finish('completed', { result });
    return result;
  } catch (err) {
    throw await run.fail(err);
  } finally {
    job.cancel = null;
    if (!stopped) await recording.stop();
  }
}

/** A run cancelled before its first step: its record, cancelled, with the config as asked (the caches may not exist). */
async function recordCancelledBeforeStart(workspace: Workspace, request: TrainRequest & { jobId: string }, runId: string): Promise<ApiError> {
  const run = await createRun(workspace, 'train', { ...request }, { id: runId });
  return run.fail(new ApiError('E_CANCELLED', `run ${runId} was cancelled while its data was being prepared, before its first step`));
}

/** `train.run`'s result from the trainer's summary: what every run measures at the top, the engine's own detail in `target`. */
function trainRunOf(
  summary: EngineTrainSummary,
  run: { runId: string; runDir: string; data: string; batchSize: number; telemetry: TelemetrySummary },
): EngineTrainRun {
  const { steps, seconds, samplesPerSec, stepTime, phasesMs, samples, threads, backend, skippedSteps, lossScale, epochs, test, model, memory, processMemory } = summary;
  return {
    runId: run.runId,
    runDir: run.runDir,
    title: `${model.family} on ${run.data}`,
    device: backend?.device ?? memory.device,
    batchSize: run.batchSize,
    steps,
    seconds,
    samplesPerSec,
    stepTime,
    phasesMs,
    telemetry: run.telemetry,
    target: {
      kind: 'engine',
      data: run.data,
      samples,
      threads,
      epochs,
      model,
      memory,
      ...(backend ? { backend } : {}),
      ...(skippedSteps !== undefined ? { skippedSteps } : {}),
      ...(lossScale !== undefined ? { lossScale } : {}),
      ...(test ? { test } : {}),
      ...(processMemory ? { processMemory } : {}),
    },
  };
}
