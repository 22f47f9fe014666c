import type { GemmPeak } from '../../stats/utilisation';
import type { EngineClient } from '../../../engine/engine-client';

export type { GemmPeak } from '../../stats/utilisation';

/** A GEMM this size runs near the kernel's best rate on a CPU and takes milliseconds; a peak wants the best rate. */
const CPU_GEMM = 512;
const CUDA_GEMM = 4096;
const EMULATED_GEMM = 64;
const GEMM_REPS = 5;
/** How long the CPU peak is looked for at least, and at most how many rounds (a fast CPU's round takes milliseconds). */
const CPU_PEAK_SECONDS = 1;
const CPU_MAX_ROUNDS = 40;

/**
 * The best peak each engine process has measured, per device, kernel and thread count (or CUDA precision and size).
 * A peak is a maximum: one measured while a neighbour held a core is low, not the device's. Keeping the best makes
 * every later run of the same engine use it, so two areas of one workbench stop showing 94 and 193 GFLOP/s for the
 * same CPU (issue 41's walk); an engine restarted (another process, another rig) measures afresh.
 */
const bestPeaks = new WeakMap<EngineClient, Map<string, GemmPeak>>();

/** `measured`, or the better peak this engine measured before under the same key, saying so. */
function bestOf(engine: EngineClient, key: string, measured: GemmPeak): GemmPeak {
  const book = bestPeaks.get(engine) ?? new Map<string, GemmPeak>();
  bestPeaks.set(engine, book);
  const known = book.get(key);
  if (known && known.gflops > measured.gflops) {
    return { ...known, how: `${known.how}, the best this engine has measured (this time ${measured.gflops.toFixed(1)} GFLOP/s)` };
  }
  book.set(key, measured);
  return measured;
}

/**
 * Measures the engine's best matrix-multiply rate on the target's device, in the precision it trains in (on CUDA
 * the faster of the engine's kernel and cuBLASLt): the compute floor's rate and the MFU's denominator. The best
 * this engine has measured under the same key is kept (bestOf).
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
    return { peak: bestOf(engine, `${device} ${size}^3 ${precision}`, { gflops: 1000 * Math.max(r.ownTflops, r.cublasLtTflops ?? 0), shape: `${size}^3 ${precision}`, how }), missing: '' };
  }
  const n = CPU_GEMM;
  let missing = '';
  // A peak is the best the device does: rounds of GEMM_REPS until CPU_PEAK_SECONDS have passed, so a moment when
  // another process held a core (a neighbour's burst) is outlasted rather than taken for the device's rate.
  let best: Awaited<ReturnType<EngineClient['benchGemm']>> | null = null;
  let rounds = 0;
  const started = Date.now();
  do {
    const r = await engine.benchGemm(n, n, n, GEMM_REPS, threads).catch((err: Error) => {
      missing = `the CPU GEMM benchmark failed: ${err.message}`;
      return null;
    });
    if (!r) break;
    rounds++;
    if (!best || r.seconds < best.seconds) best = r;
  } while (Date.now() - started < CPU_PEAK_SECONDS * 1000 && rounds < CPU_MAX_ROUNDS);
  if (!best) return { peak: null, missing };
  const how = `the engine's ${best.kernel} kernel on ${best.threads} thread${best.threads === 1 ? '' : 's'}, best of ${rounds * GEMM_REPS}`;
  return { peak: bestOf(engine, `cpu ${best.kernel} ${best.threads}`, { gflops: (2 * n * n * n) / best.seconds / 1e9, shape: `${n}^3 fp32`, how }), missing: '' };
}

/** Measurements more when the peak came out below what training achieved. */
const PEAK_RETRIES = 3;

/**
 * The peak, measured again (up to PEAK_RETRIES times, the best kept) while it is below `achievedGflops`, the rate
 * training just reached on the same device: a peak under the achieved rate was measured while something else held
 * the device. One still below after that is reported as it is, and the MFU says it is impossible.
 */
export async function gemmPeakAbove(engine: EngineClient, device: string, precision: 'fp32' | 'bf16' | 'fp16', threads: number, achievedGflops: number): Promise<{ peak: GemmPeak | null; missing: string }> {
  let got = await measureGemmPeak(engine, device, precision, threads);
  for (let i = 0; i < PEAK_RETRIES && got.peak && got.peak.gflops < achievedGflops; i++) {
    const again = await measureGemmPeak(engine, device, precision, threads);
    if (again.peak && again.peak.gflops > got.peak.gflops) got = again;
  }
  return got;
}
