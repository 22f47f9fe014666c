// The CPU GEMM peak is looked for over a second and measured again while it is below what training achieved:
// a neighbour's burst during one measurement must not make an MFU above 100%.
import { describe, expect, it } from 'vitest';

import type { EngineClient } from '../../src-main/engine/engine-client';
import { gemmPeakAbove, measureGemmPeak } from '../../src-main/core/targets/engine/gemm-peak';

/** An engine whose GEMM takes `seconds[i]` on its i-th call (then the last one), timing each call as it returns. */
function engineTiming(seconds: number[], msPerCall = 0): { engine: EngineClient; calls: () => number } {
  let calls = 0;
  const engine = {
    benchGemm: async (_m: number, _n: number, _k: number, _reps: number, threads: number) => {
      const s = seconds[Math.min(calls++, seconds.length - 1)];
      if (msPerCall) await new Promise((r) => setTimeout(r, msPerCall));
      return { seconds: s, kernel: 'avx2', lanes: 8, threads };
    },
  } as unknown as EngineClient;
  return { engine, calls: () => calls };
}

const gflops = (seconds: number) => (2 * 512 ** 3) / seconds / 1e9;

describe('the CPU GEMM peak', () => {
  it('takes the best round over at least a second, and says how many GEMMs it is the best of', async () => {
    const { engine, calls } = engineTiming([0.2, 0.1, 0.15], 300);
    const { peak } = await measureGemmPeak(engine, 'cpu', 'fp32', 2);
    expect(calls()).toBeGreaterThanOrEqual(4);
    expect(peak!.gflops).toBeCloseTo(gflops(0.1), 6);
    expect(peak!.how).toBe(`the engine's avx2 kernel on 2 threads, best of ${calls() * 5}`);
  });

  it('measures again while the peak is below the rate training achieved, keeping the best', async () => {
    // Each measurement is one round here (a fast engine would run 40 rounds a second: this engine's rounds take 1.1 s).
    const { engine } = engineTiming([1.0, 0.5, 0.25], 1100);
    const { peak } = await gemmPeakAbove(engine, 'cpu', 'fp32', 2, gflops(0.3));
    expect(peak!.gflops).toBeCloseTo(gflops(0.25), 6);
  }, 20_000);

  it('stops after three more measurements and reports the best, which the MFU then calls impossible', async () => {
    const { engine, calls } = engineTiming([1.0], 1100);
    const { peak } = await gemmPeakAbove(engine, 'cpu', 'fp32', 2, gflops(0.01));
    expect(calls()).toBe(4);
    expect(peak!.gflops).toBeCloseTo(gflops(1.0), 6);
  }, 20_000);

  it('keeps the best peak this engine measured: a later measurement under load reports it, and says what it got', async () => {
    const { engine } = engineTiming([0.1, 0.1, 0.2], 1100);
    const first = (await measureGemmPeak(engine, 'cpu', 'fp32', 2)).peak!;
    expect(first.gflops).toBeCloseTo(gflops(0.1), 6);
    await measureGemmPeak(engine, 'cpu', 'fp32', 2);
    // A round twice as slow (a neighbour held a core): the peak is the engine's best, not this round's.
    const loaded = (await measureGemmPeak(engine, 'cpu', 'fp32', 2)).peak!;
    expect(loaded.gflops).toBe(first.gflops);
    expect(loaded.how).toBe(`the engine's avx2 kernel on 2 threads, best of 5, the best this engine has measured (this time ${gflops(0.2).toFixed(1)} GFLOP/s)`);
    // Another thread count is another peak; another engine (a restart) measures afresh.
    expect((await measureGemmPeak(engine, 'cpu', 'fp32', 1)).peak!.gflops).toBeCloseTo(gflops(0.2), 6);
    expect((await measureGemmPeak(engineTiming([0.2], 1100).engine, 'cpu', 'fp32', 2)).peak!.gflops).toBeCloseTo(gflops(0.2), 6);
  }, 20_000);
});
