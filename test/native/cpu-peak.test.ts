// The CPU peak that bench/cpu compares the GEMM with: measured with FMA chains,
// so it must be a real upper bound and imply a clock a CPU can have.
import { createRequire } from 'node:module';

import { beforeAll, describe, expect, it } from 'vitest';

import { ADDON_PATH, requireBuilt } from '../helpers/repo';

interface Peak {
  isa: 'avx512' | 'avx2';
  lanes: number;
  threads: number;
  chains: number;
  gflops: number;
  perThreadGflops: number[];
  dependentFmaPerSec: number;
}

// The part of the addon bench/cpu uses (src-main/engine/native-addon.ts types the app's side).
interface BenchAddon {
  measurePeak(threads: number): Peak | null;
  benchGemm(M: number, N: number, K: number, reps: number, threads: number): { seconds: number; kernel: string };
}

const MAX_GHZ = 6;
const MAX_FMA_PORTS = 2; // no x86 core issues more than two vector FMAs per cycle
const MIN_FMA_LATENCY = 3; // nor completes a dependent one in fewer cycles

let addon: BenchAddon;
beforeAll(() => {
  requireBuilt();
  addon = createRequire(__filename)(ADDON_PATH) as BenchAddon;
});

const x86WithFma = process.arch === 'x64';

describe('measurePeak', () => {
  it.runIf(x86WithFma)('measures FMA throughput that implies a clock a CPU can have', () => {
    const peak = addon.measurePeak(1);
    expect(peak).not.toBeNull();
    const p = peak as Peak;
    expect(p.threads).toBe(1);
    expect(p.lanes).toBe(p.isa === 'avx512' ? 16 : 8);
    // One thread's FLOP/s over the most FLOP per cycle a core can issue: a clock floor.
    const minGhz = p.gflops / (MAX_FMA_PORTS * 2 * p.lanes);
    expect(minGhz).toBeGreaterThan(0.3);
    expect(minGhz).toBeLessThan(MAX_GHZ);
    // A dependent chain completes one FMA per latency: at least 3 cycles each, so below 2 G/s.
    expect(p.dependentFmaPerSec * MIN_FMA_LATENCY).toBeLessThan(MAX_GHZ * 1e9);
    // Independent chains overlap, so they are several times faster than one dependent chain.
    const independentFmaPerSec = (p.gflops * 1e9) / (2 * p.lanes);
    expect(independentFmaPerSec / p.dependentFmaPerSec).toBeGreaterThan(2);
  });

  it.runIf(x86WithFma)('is an upper bound on the engine GEMM on the same threads', () => {
    const peak = addon.measurePeak(1) as Peak;
    const n = 384;
    const gemm = addon.benchGemm(n, n, n, 5, 1);
    const gemmGflops = (2 * n ** 3) / gemm.seconds / 1e9;
    expect(gemmGflops).toBeLessThan(peak.gflops);
  });

  it.runIf(x86WithFma)('sums every thread it was given', () => {
    const peak = addon.measurePeak(2) as Peak;
    expect(peak.threads).toBe(2);
    expect(peak.perThreadGflops).toHaveLength(2);
    expect(peak.gflops).toBeCloseTo(peak.perThreadGflops[0] + peak.perThreadGflops[1], 6);
  });
});
