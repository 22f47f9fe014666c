import path from 'node:path';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { TrainEvent, TrainPreparingEvent, TrainRequest, TrainResult } from '../api/training';
import { TrainEventSchema, TrainResultSchema } from '../api/training';
import type { EngineClient } from '../engine/engine-client';
import type { HostTrainData } from '../engine/host-protocol';
import type { DatasetService } from './datasets/dataset-service';
import type { EventHub } from './event-hub';
import type { TelemetryService } from './telemetry/telemetry-service';
import { describeComputeDevice } from './compute-device';
import { createRun, newRunId } from './run-store';
import { checkAborted } from './datasets/importers/record-source';
import type { Workspace } from './workspace';

export interface RunOptions {
  onEvent?: (event: TrainEvent) => void;
  /**
   * Called with the run's id before its data is prepared, e.g. to offer a cancel button (a run
   * cancelled then is recorded as cancelled; a request the engine refuses leaves no run).
   */
  onStart?: (runId: string) => void;
  /**
   * The CLI may read data from anywhere the user points it; requests from the UI
   * (possibly a browser on another machine in serve mode) stay inside the workspace.
   */
  allowPathsOutsideWorkspace?: boolean;
}

/** Runs training in the engine host, records it under runs/<id>, and streams its progress. */
export class TrainingService {
  private readonly active = new Set<string>();
  /** Runs whose data is being prepared (caches built or read, the request checked), by id. */
  private readonly preparing = new Map<string, AbortController>();

  constructor(
    private readonly engine: EngineClient,
    private readonly events: EventHub,
    private readonly workspace: Workspace,
    private readonly datasets: DatasetService,
    private readonly telemetry: TelemetryService,
  ) {}

  async run(request: TrainRequest, options: RunOptions = {}): Promise<TrainResult> {
    // The id is known from the start, so Cancel (and the CLI's Ctrl-C) reach a run while its data is prepared.
    const runId = request.runId ?? newRunId();
    if (this.preparing.has(runId) || this.active.has(runId)) throw new ApiError('E_BAD_INPUT', `a run with the id ${runId} is already running`);
    const preparing = new AbortController();
    this.preparing.set(runId, preparing);
    options.onStart?.(runId);
    const announce = (stage: TrainPreparingEvent['stage'], fraction: number | null) => this.events.emit('train.preparing', { runId, stage, fraction });
    let data: HostTrainData;
    try {
      data = await this.datasets.trainingData(request.data, {
        allowPathsOutsideWorkspace: options.allowPathsOutsideWorkspace,
        signal: preparing.signal,
        onProgress: (p) => announce(p.phase, p.recordsTotal > 0 ? Math.min(1, p.records / p.recordsTotal) : null),
      });
      checkAborted(preparing.signal);
      announce('checking', null);
      // A request the engine refuses (no such device, bf16 on the CPU, a batch larger than the data ...)
      // is refused here, before a run exists: a run folder means the engine accepted the request.
      await this.engine.checkTraining({ spec: request.spec, data, options: request.options });
      checkAborted(preparing.signal);
    } catch (err) {
      // A cancelled run is recorded as cancelled (people look for it), unlike a refused request.
      if (preparing.signal.aborted) throw await this.recordCancelledBeforeStart(request, runId);
      throw err;
    } finally {
      this.preparing.delete(runId);
    }
    const run = await createRun(this.workspace, 'train', { ...request, cachedData: data }, { id: runId, computeDevice: describeComputeDevice(await this.engine.devices(), request.options.device) });
    this.active.add(run.id);
    const recording = this.telemetry.record(run.stream('telemetry.jsonl', { append: true }));
    let stopped = false;
    const stopRecording = () => {
      stopped = true;
      return recording.stop();
    };
    try {
      const raw = await this.engine.train(
        { runId: run.id, spec: request.spec, data, options: request.options, checkpointPath: path.join(run.dir, 'checkpoint.safetensors') },
        (rawEvent) => {
          // Stamped on arrival, so curves can use a time axis (the engine's clock is per step, not wall-clock).
          const parsed = TrainEventSchema.safeParse({ ...(rawEvent as object), t: Date.now() });
          if (!parsed.success) return; // an engine newer than this contract; the run.json still gets the result
          run.appendEvent(parsed.data);
          this.events.emit('train.progress', { runId: run.id, event: parsed.data });
          options.onEvent?.(parsed.data);
        },
      );
      const telemetry = await stopRecording();
      const parsed = TrainResultSchema.safeParse({ ...(raw as object), runId: run.id, runDir: run.relativeDir, data: data.description, telemetry });
      if (!parsed.success) {
        throw new ApiError('E_INTERNAL', `the engine's training summary does not match the contract: ${formatIssues(parsed.error, 'result')}`);
      }
      await run.finish('completed', { result: parsed.data });
      return parsed.data;
    } catch (err) {
      throw await run.fail(err);
    } finally {
      if (!stopped) await recording.stop();
      this.active.delete(run.id);
    }
  }

  /** A run cancelled before its first step: its record, cancelled, with the config as asked (the caches may not exist). */
  private async recordCancelledBeforeStart(request: TrainRequest, runId: string): Promise<ApiError> {
    const run = await createRun(this.workspace, 'train', { ...request }, { id: runId });
    return run.fail(new ApiError('E_CANCELLED', `run ${runId} was cancelled while its data was being prepared, before its first step`));
  }

  async cancel(runId: string): Promise<{ cancelled: boolean }> {
    const preparing = this.preparing.get(runId);
    if (preparing) {
      preparing.abort();
      return { cancelled: true };
    }
    if (!this.active.has(runId)) return { cancelled: false };
    return this.engine.cancelTraining(runId);
  }
}
