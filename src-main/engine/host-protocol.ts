import type { ApiErrorPayload } from '../api/errors';
import type { ModelSpec } from '../api/model-spec';
import type { TrainOptions } from '../api/training';

/**
 * JSON messages between the supervisor and the engine-host process. They stay
 * plain data so they cross both child_process and Electron's utilityProcess.
 */
export type HostMethod =
  | 'version'
  | 'devices'
  | 'resolveDevice'
  | 'ping'
  | 'modelInfo'
  | 'train.check'
  | 'train.predictMemory'
  | 'engine.memory'
  | 'train.run'
  | 'train.cancel'
  | 'loader.bench'
  | 'loader.sequentialRead'
  | 'bench.gemm'
  | 'bench.gemmCuda'
  | 'bench.h2dCopy'
  | 'debug.abort';

/** A cache directory, or raw source files read in place (the uncached path). */
export type HostSource = { kind: 'cache'; dir: string } | { kind: 'raw'; layout: { records: number; fields: unknown[] } };

/** Cached training data and the input normalisation to apply (a type, so it is stored in run.json as is). */
export type HostTrainData = {
  train: { dir: string };
  test?: { dir: string };
  normalize?: Record<string, { scale: number; offset: number }>;
  description: string;
  /** Read the training records from here instead of the cache in `train` (the uncached path the optimisation wizard compares). */
  trainSource?: HostSource;
};

/** Parameters of 'train.check': a validated request with its data in caches. */
export interface HostTrainSetup {
  spec: ModelSpec;
  data: HostTrainData;
  options: TrainOptions;
}

/** Parameters of 'train.predictMemory': a setup and the batch sizes to predict for. */
export interface HostPredictParams extends HostTrainSetup {
  batchSizes: number[];
}

/** Parameters of 'train.run': the setup plus the run it records into and where to put the checkpoint. */
export interface HostTrainParams extends HostTrainSetup {
  runId: string;
  /** Written when training completes; omitted to skip. */
  checkpointPath?: string;
}

export interface HostRequest {
  kind: 'request';
  id: number;
  method: HostMethod;
  params: unknown;
}

export type HostReply =
  | { kind: 'reply'; id: number; ok: true; result: unknown }
  | { kind: 'reply'; id: number; ok: false; error: ApiErrorPayload };

/** Sent once the addon is loaded, or with `error` when it could not be. */
export interface HostReady {
  kind: 'ready';
  pid: number;
  error?: string;
}

/** A progress event of the request `id` (training steps and epochs). */
export interface HostEvent {
  kind: 'event';
  id: number;
  data: unknown;
}

export type HostToSupervisor = HostReply | HostReady | HostEvent;

/** Environment variable that enables debug-only methods in the host (tests). */
export const HOST_DEBUG_ENV = 'TRAINBENCH_ENGINE_DEBUG';
