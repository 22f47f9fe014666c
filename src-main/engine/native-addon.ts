import type { Devices } from '../api/devices';
import type { ModelInfo } from '../api/model-spec';
import type { MemoryBreakdown } from '../api/training';

/** Pinned host-to-device copy rate (native/src/cuda/copy_bench.h); `emulated` when no GPU ran it. */
export interface H2dCopyResult {
  bytes: number;
  reps: number;
  bestSeconds: number;
  medianSeconds: number;
  bestMBps: number;
  medianMBps: number;
  emulated: boolean;
  how: string;
}

/**
 * The whole native module as C++ exports it (native/src/addon/addon.cpp).
 * This is the contract with C++: change both together.
 */
export interface NativeAddon {
  version(): { version: string; napiVersion: number; cudaCompiled: boolean; debugEntryPoints: boolean };
  devices(): Devices;
  /** Throws E_BAD_INPUT when the name is not "cpu", "cuda" or "cuda:N", or the device is missing. */
  resolveDevice(name: string): { kind: 'cpu' | 'cuda'; index: number };
  /** Finite-difference check of one op in float64 on random shapes chosen by the seed. */
  gradcheck(op: string, seed: number): { op: string; shapes: string; maxRelError: number; checked: number };
  gradcheckOps(): string[];
  /** Throws E_BAD_INPUT naming the field when the spec (JSON text) is invalid. */
  modelInfo(specJson: string): ModelInfo;
  Trainer: new (specJson: string, optionsJson?: string) => NativeTrainer;
  /** Best-of-reps time of the engine's float GEMM (M x K) . (K x N), for bench/cpu. */
  benchGemm(M: number, N: number, K: number, reps: number, threads: number): { seconds: number; kernel: string; lanes: number; threads: number };
  sourceInfo(sourceJson: string): NativeSourceInfo;
  /** Reads every batch of `epochs` epochs through the loader (blocking; tests and tools). */
  runLoader(sourceJson: string, optionsJson: string, epochs?: number): { epochs: Float64Array[]; fields: Record<string, Uint8Array> };
  benchLoader(sourceJson: string, optionsJson: string, maxBatches: number, maxSeconds: number): Promise<LoaderStats>;
  sequentialRead(paths: string[]): Promise<{ bytes: number; seconds: number; mbPerSec: number }>;
  /** Pinned host-to-device copies of `bytes` on cuda:`device`, best and median of `reps` (E_CUDA without a device). */
  benchH2dCopy(device: number, bytes: number, reps: number): Promise<H2dCopyResult>;
  /** A CUDA kernel against its CPU twin on random inputs; E_CUDA without a device. Some checks add facts of their own. */
  cudaParity(op: string, seed: number): { op: string; shapes: string; maxRelError: number; tolerance: number; message?: string; sameBits?: boolean; boardSlices?: number };
  cudaParityOps(): string[];
  /** Bytes the CPU backend's training buffers hold now, all trainers together (its baseline is 0 between runs). */
  engineMemory(): { chargedBytes: number };
  /** Caching-allocator statistics of cuda:0. */
  cudaMemory(): { allocated: number; reserved: number; peakAllocated: number; allocations: number; ooms: number };
  /** Own GEMM kernel against cuBLASLt on cuda:0 (throws E_CUDA without a GPU). */
  benchGemmCuda(
    M: number,
    N: number,
    K: number,
    precision: 'fp32' | 'bf16' | 'fp16',
    reps: number,
  ): {
    shape: string;
    precision: string;
    ownTflops: number;
    cublasLtTflops: number | null;
    cublasLtNote: string | null;
    theoreticalTflops: number;
    theoreticalNote: string;
  };
  /** Whether cuBLASLt can be loaded here (no GPU needed). */
  cublasLt(): { loaded: boolean; library: string | null; reason: string | null };
  /** The fp16 dynamic loss-scale rule, replayed on the host. */
  lossScaleSchedule(foundNonfinite: boolean[], growthInterval: number): { scale: number; applied: boolean }[];
  /** Peak FP32 rate measured with independent FMA chains on every thread (bench/cpu), or null without an x86 FMA kernel. */
  measurePeak(threads: number): { isa: 'avx512' | 'avx2'; lanes: number; threads: number; chains: number; gflops: number; perThreadGflops: number[]; dependentFmaPerSec: number; seconds: number } | null;
  /** Present only in builds with TB_DEBUG_ENTRYPOINTS: aborts the process. */
  debugAbort?: () => never;
}

export interface NativeSourceInfo {
  records: number;
  description: string;
  fields: { name: string; dtype: string; shape: number[]; recordBytes: number }[];
}

export interface LoaderStats {
  batches: number;
  records: number;
  bytes: number;
  seconds: number;
  samplesPerSec: number;
  mbPerSec: number;
  latencyP50Ms: number;
  latencyP95Ms: number;
  waitedSeconds: number;
  waitedFraction: number;
  workerEfficiency: number;
}

/** One named field of fixed-size records; the engine copies the bytes. */
export interface NativeField {
  dtype: 'uint8' | 'int32' | 'float16' | 'float32';
  /** Per-record shape ([] for one value per record). */
  shape: number[];
  data: ArrayBufferView;
  /** Widening to float computes value * scale + offset. */
  scale?: number;
  offset?: number;
}

/** One model, its data, and jobs that run off the JS thread. */
export interface NativeTrainer {
  info(): ModelInfo & { threads: number };
  setData(split: 'train' | 'test', fields: Record<string, NativeField>): void;
  /** A cache ({kind:'cache',dir}) or raw files ({kind:'raw',layout}) as JSON; normalisation per field as JSON. */
  setSource(split: 'train' | 'test', sourceJson: string, normalizeJson?: string): NativeSourceInfo;
  /**
   * Runs everything train(optionsJson) does before its first micro-batch (options, device,
   * backend, loader, steps per epoch) and stops: rejects exactly as train would, trains nothing.
   */
  check(optionsJson: string): Promise<null>;
  /** The memory by kind train(optionsJson) would use at its batchSize, from the shapes and the data, without training. */
  predictMemory(optionsJson: string): MemoryBreakdown;
  /** Options as JSON text; events are step and epoch objects. Rejects with E_CANCELLED on cancel(). */
  train(optionsJson: string, onEvent?: (event: unknown) => void): Promise<unknown>;
  evaluate(split: 'train' | 'test', batchSize?: number): Promise<{ loss: number; accuracy: number | null; samples: number }>;
  /** Asks a running job to stop at the next micro-batch; returns whether one was running. */
  cancel(): boolean;
  save(path: string): void;
  load(path: string): Record<string, string>;
  /** A copy of the flat parameter block. */
  params(): Float32Array;
  /** Frees the model and unmaps the data now (not at garbage collection); any later call throws E_BAD_INPUT. */
  release(): void;
}

/** Shape of errors thrown by the addon. */
export interface NativeError extends Error {
  code?: string;
  where?: string;
}
