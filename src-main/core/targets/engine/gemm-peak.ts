import type { GemmPeak } from '../../stats/utilisation';
import type { EngineClient } from '../../../engine/engine-client';

export type { GemmPeak } from '../../stats/utilisation';

/** A GEMM this size runs near the kernel's best rate on a CPU and takes milliseconds; a peak wants the best rate. */
const CPU_GEMM = 512;
const CUDA_GEMM = 4096;
const EMULATED_GEMM = 64;
const GEMM_REPS = 5;


/**
 * Measures the engine's best matrix-multiply rate on the target's device, in the precision it trains in (on CUDA
 * the faster of the engine's kernel and cuBLASLt): the compute floor's rate and the MFU's denominator.
 */
export async function measureGemmPeak(engine: EngineClient, device: string, precision: 'fp32' | 'bf16' | 'fp16', threads: number): Promise<{ peak: GemmPeak | null; missing: string }> {
  if (device.startsWith('cuda')) {
    // A rate from the emulated device is the CPU's: it says so wherever it is shown (ADR 0023), and it is
    // measured small, since a 4096^3 GEMM there outlasts the emulator's kernel time limit.
    const emulated = (await engine.devices()).cuda.emulated === true;
    const size = emulated ? EMULATED_GEMM : CUDA_GEMM;
    let missing = '';
    const r = await engine.benchGemmCuda(size, size, size, precision, GEMM_REPS).catch((err: Error) => {
      missing = `the GEMM benchmark on ${device} failed: ${err.message}`;
      return null;
    });
    if (!r) return { peak: null, missing };
    const lt = r.cublasLtTflops !== null && r.cublasLtTflops > r.ownTflops;
    const how = `${emulated ? "emulated device (CPU), not a GPU's rate: " : ''}${lt ? 'cuBLASLt, measured' : "the engine's own kernel, measured"}`;
    return { peak: { gflops: 1000 * Math.max(r.ownTflops, r.cublasLtTflops ?? 0), shape: `${size}^3 ${precision}`, how }, missing: '' };
  }
  const n = CPU_GEMM;
  let missing = '';
  const r = await engine.benchGemm(n, n, n, GEMM_REPS, threads).catch((err: Error) => {
    missing = `the CPU GEMM benchmark failed: ${err.message}`;
    return null;
  });
  if (!r) return { peak: null, missing };
  return { peak: { gflops: (2 * n * n * n) / r.seconds / 1e9, shape: `${n}^3 fp32`, how: `the engine's ${r.kernel} kernel on ${r.threads} thread${r.threads === 1 ? '' : 's'}, best of ${GEMM_REPS}` }, missing: '' };
}
