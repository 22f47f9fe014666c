import type { Limits, OptimiseConfig } from '../../api/optimise';
import type { ModelSpec } from '../../api/model-spec';
import type { EngineClient } from '../../engine/engine-client';
import type { PreparedBenchmark } from '../benchmarks/training-benchmark';
import { physicalLimits } from './limits';

/** A GEMM this size runs near the kernel's best rate on a CPU and takes milliseconds; the floor wants the best rate. */
const CPU_GEMM = 512;
const CUDA_GEMM = 4096;
const GEMM_REPS = 5;

/**
 * Measures the rates behind the physical limits on this machine: the engine's
 * GEMM on the target's device, the sequential read of the files the target
 * reads (the cache's shards, or the source files), and then the floors.
 */
export async function measureLimits(engine: EngineClient, spec: ModelSpec, config: OptimiseConfig, prepared: PreparedBenchmark, baselineStepMs: number, device: string): Promise<Limits> {
  const info = await engine.modelInfo(spec);
  let gemm: { gflops: number; shape: string; how: string } | null = null;
  let gemmMissing = '';
  if (device.startsWith('cuda')) {
    const precision = config.options.precision;
    const r = await engine.benchGemmCuda(CUDA_GEMM, CUDA_GEMM, CUDA_GEMM, precision, GEMM_REPS).catch((err: Error) => {
      gemmMissing = `the GEMM benchmark on ${device} failed: ${err.message}`;
      return null;
    });
    if (r) gemm = { gflops: 1000 * Math.max(r.ownTflops, r.cublasLtTflops ?? 0), shape: `${CUDA_GEMM}^3 ${precision}`, how: r.cublasLtTflops !== null && r.cublasLtTflops > r.ownTflops ? 'cuBLASLt, measured' : "the engine's own kernel, measured" };
  } else {
    const n = CPU_GEMM;
    const r = await engine.benchGemm(n, n, n, GEMM_REPS, config.options.threads).catch((err: Error) => {
      gemmMissing = `the CPU GEMM benchmark failed: ${err.message}`;
      return null;
    });
    if (r) gemm = { gflops: (2 * n * n * n) / r.seconds / 1e9, shape: `${n}^3 fp32`, how: `the engine's ${r.kernel} kernel on ${r.threads} threads, best of ${GEMM_REPS}` };
  }
  const read = await engine.sequentialRead(prepared.readFiles).catch(() => null);
  const readWhat = config.readFrom === 'source' ? `the source files (${prepared.readFiles.length})` : `the cache's ${prepared.readFiles.length} shard(s)`;
  return physicalLimits({
    flopsPerSample: info.flopsPerSample,
    samplesPerStep: prepared.perStep,
    gemm,
    gemmMissing,
    bytesPerSample: prepared.manifest.fields.reduce((s, f) => s + f.recordBytes, 0),
    readMBps: read && read.mbPerSec > 0 ? read.mbPerSec : null,
    readWhat,
    h2dMBps: null,
    h2dMissing: device.startsWith('cuda') ? 'the engine has no host-to-device bandwidth probe yet' : 'a CPU target copies nothing to a device',
    baselineStepMs,
  });
}
