import type { Devices, EngineVersion, PingResult } from '../api/devices';
import type { EngineStatusEvent } from '../api/events';
import type { ModelInfo, ModelSpec } from '../api/model-spec';
import type { MemoryBreakdown } from '../api/training';
import type { HostPredictParams, HostSource, HostTrainParams, HostTrainSetup } from './host-protocol';
import type { H2dCopyResult, LoaderStats } from './native-addon';
import type { SupervisorOptions } from './supervisor';
import { EngineSupervisor } from './supervisor';

/**
 * Typed wrapper over the supervised engine host. Callers never see the
 * process, the addon or its handles.
 */
export class EngineClient {
  readonly supervisor: EngineSupervisor;

  constructor(options: SupervisorOptions = {}) {
    this.supervisor = new EngineSupervisor(options);
  }

  start(): Promise<void> {
    return this.supervisor.start();
  }

  stop(): Promise<void> {
    return this.supervisor.stop();
  }

  status(): EngineStatusEvent {
    return this.supervisor.status();
  }

  onStatus(listener: (status: EngineStatusEvent) => void): () => void {
    this.supervisor.on('status', listener);
    return () => this.supervisor.off('status', listener);
  }

  version(): Promise<EngineVersion> {
    return this.supervisor.request('version');
  }

  devices(): Promise<Devices> {
    return this.supervisor.request('devices');
  }

  resolveDevice(name: string): Promise<{ kind: 'cpu' | 'cuda'; index: number }> {
    return this.supervisor.request('resolveDevice', { name });
  }

  ping(): Promise<PingResult> {
    return this.supervisor.request('ping');
  }

  modelInfo(spec: ModelSpec): Promise<ModelInfo> {
    return this.supervisor.request('modelInfo', { spec });
  }

  /**
   * Everything train() sets up and checks before its first step (spec, data, options,
   * device), without training: rejects with the engine's own E_BAD_INPUT and reason.
   * No time limit, like train(): opening a large dataset or a GPU may take a while.
   */
  checkTraining(setup: HostTrainSetup): Promise<void> {
    return this.supervisor.request('train.check', setup, { timeoutMs: null });
  }

  /** Memory by kind that training would use at each batch size (the engine's memory model), without training. */
  predictMemory(params: HostPredictParams): Promise<MemoryBreakdown[]> {
    return this.supervisor.request('train.predictMemory', params, { timeoutMs: null });
  }

  /** Bytes the CPU backend's training buffers hold now in the host: 0 between runs, however the last one ended. */
  engineMemory(): Promise<{ chargedBytes: number }> {
    return this.supervisor.request('engine.memory');
  }

  /**
   * Trains to completion in the host; resolves with the engine's summary (validated by the caller). A throw from
   * onEvent (a write into the run's folder refused: a link planted there) ends this run with that error: the engine
   * stops training it, and train() rejects with it once the engine has stopped. It never reaches the process.
   */
  async train(params: HostTrainParams, onEvent: (event: unknown) => void): Promise<unknown> {
    // Held in an object: the listener changes it, which narrowing across closures cannot see.
    const failure: { failed: boolean; error: unknown } = { failed: false, error: null };
    const listener = (event: unknown) => {
      if (failure.failed) return; // the run is being stopped: its last events go nowhere
      try {
        onEvent(event);
      } catch (err) {
        failure.failed = true;
        failure.error = err;
        this.cancelTraining(params.runId).catch(() => undefined); // the engine may have finished it already
      }
    };
    let summary: unknown;
    try {
      summary = await this.supervisor.request('train.run', params, { timeoutMs: null, onEvent: listener });
    } catch (err) {
      throw failure.failed ? failure.error : err;
    }
    if (failure.failed) throw failure.error;
    return summary;
  }

  cancelTraining(runId: string): Promise<{ cancelled: boolean }> {
    return this.supervisor.request('train.cancel', { runId });
  }

  /** Times the loader on a source with one setting (workers, prefetch, batch size ...). */
  benchLoader(source: HostSource, options: object, maxBatches: number, maxSeconds: number): Promise<LoaderStats> {
    return this.supervisor.request('loader.bench', { source, options, maxBatches, maxSeconds }, { timeoutMs: (maxSeconds + 60) * 1000 });
  }

  /** Sequential read bandwidth of files (8 MiB blocks), the baseline a loader is compared with. */
  sequentialRead(files: string[]): Promise<{ bytes: number; seconds: number; mbPerSec: number }> {
    return this.supervisor.request('loader.sequentialRead', { files }, { timeoutMs: null });
  }

  /** Best-of-reps seconds of the engine's own float GEMM (m x k) . (k x n) on the CPU: the measured matrix rate behind a compute floor. */
  benchGemm(m: number, n: number, k: number, reps: number, threads: number): Promise<{ seconds: number; kernel: string; lanes: number; threads: number }> {
    return this.supervisor.request('bench.gemm', { m, n, k, reps, threads }, { timeoutMs: null });
  }

  /** TFLOP/s of the engine's own GEMM and of cuBLASLt on cuda:0 at one shape and precision (E_CUDA without a GPU). */
  benchGemmCuda(m: number, n: number, k: number, precision: 'fp32' | 'bf16' | 'fp16', reps: number): Promise<{ ownTflops: number; cublasLtTflops: number | null; shape: string }> {
    return this.supervisor.request('bench.gemmCuda', { m, n, k, precision, reps }, { timeoutMs: null });
  }

  /** Pinned host-to-device copy rate on cuda:`device` for copies of `bytes` (E_CUDA without a GPU): the copy floor's rate. */
  benchH2dCopy(device: number, bytes: number, reps: number): Promise<H2dCopyResult> {
    return this.supervisor.request('bench.h2dCopy', { device, bytes, reps }, { timeoutMs: null });
  }

  /** Crashes the host on purpose (debug hosts only); used to prove crash isolation. */
  debugAbort(): Promise<never> {
    return this.supervisor.request('debug.abort');
  }
}
