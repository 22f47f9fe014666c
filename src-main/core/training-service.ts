import path from 'node:path';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { TrainEvent, TrainRequest, TrainResult } from '../api/training';
import { TrainEventSchema, TrainResultSchema } from '../api/training';
import type { EngineClient } from '../engine/engine-client';
import type { DatasetService } from './datasets/dataset-service';
import type { EventHub } from './event-hub';
import type { TelemetryService } from './telemetry/telemetry-service';
import { createRun } from './run-store';
import type { Workspace } from './workspace';

export interface RunOptions {
  onEvent?: (event: TrainEvent) => void;
  /** Called once the run has an id (before any event), e.g. to offer a cancel button. */
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

  constructor(
    private readonly engine: EngineClient,
    private readonly events: EventHub,
    private readonly workspace: Workspace,
    private readonly datasets: DatasetService,
    private readonly telemetry: TelemetryService,
  ) {}

  async run(request: TrainRequest, options: RunOptions = {}): Promise<TrainResult> {
    const data = await this.datasets.trainingData(request.data, { allowPathsOutsideWorkspace: options.allowPathsOutsideWorkspace });
    // A request the engine refuses (no such device, bf16 on the CPU, a batch larger than the data ...)
    // is refused here, before a run exists: a run folder means the engine accepted the request.
    await this.engine.checkTraining({ spec: request.spec, data, options: request.options });
    const run = await createRun(this.workspace, 'train', { ...request, cachedData: data }, { id: request.runId });
    this.active.add(run.id);
    options.onStart?.(run.id);
    const recording = this.telemetry.record(path.join(run.dir, 'telemetry.jsonl'));
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

  async cancel(runId: string): Promise<{ cancelled: boolean }> {
    if (!this.active.has(runId)) return { cancelled: false };
    return this.engine.cancelTraining(runId);
  }
}
