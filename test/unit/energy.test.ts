// Energy per sample (issue 26 item 4): the GPUs' power integrated over the samples' own times, checked against
// synthetic traces whose energy is known, then per sample at a throughput.
import { describe, expect, it } from 'vitest';

import type { TelemetrySample } from '../../src-main/api/telemetry';
import { mergeTelemetry } from '../../src-main/core/stats/benchmark-summary';
import { energyPerSample, integratePower } from '../../src-main/core/telemetry/energy';
import { summarize } from '../../src-main/core/telemetry/summary';

const host = { cpuPerCore: [50], memUsedBytes: 1, memAvailableBytes: 1, memTotalBytes: 2, swapUsedBytes: 0, swapTotalBytes: 0, diskReadBytesPerSec: null, diskWriteBytesPerSec: null, engineHost: null };
const gpu = (index: number, powerDrawW: number | null) => ({
  index, uuid: null, name: 'NVIDIA H100', utilizationGpu: 90, utilizationMemory: 30, memoryUsedMiB: 1000, memoryTotalMiB: 81_559, temperatureC: 60,
  powerDrawW, powerLimitW: 700, clockSmMHz: 1980, clockMemMHz: 2619, pcieGen: 5, pcieWidth: 16, throttleReasons: null,
});
const sample = (tMs: number, ...watts: (number | null)[]): TelemetrySample => ({ t: tMs, gpus: watts.map((w, i) => gpu(i, w)), host });

describe('energy from power samples', () => {
  it('two GPUs at 50 W each for 10 s, sampled every 0.5 s: 1,000 J', () => {
    const trace = Array.from({ length: 21 }, (_, i) => sample(1_000_000 + 500 * i, 50, 50));
    expect(integratePower(trace)).toEqual({ joules: 1000, seconds: 10 });
  });

  it('a ramp from 0 to 200 W over 10 s, sampled unevenly and out of order: the trapezoid is exact, 1,000 J', () => {
    const times = [0, 0.3, 1.9, 2.0, 5.5, 7.25, 9.9, 10];
    const trace = times.map((s) => sample(s * 1000, 20 * s)).reverse();
    const e = integratePower(trace)!;
    expect(e.seconds).toBe(10);
    expect(e.joules).toBeCloseTo(1000, 9);
  });

  it('skips samples without a power reading, and needs two readings to span any time', () => {
    expect(integratePower([sample(0, 100), sample(1000, null), sample(2000, 100)])).toEqual({ joules: 200, seconds: 2 });
    expect(integratePower([sample(0, 100)])).toBeNull();
    expect(integratePower([])).toBeNull();
  });

  it('per sample at a throughput, through the run summary and across repetitions', () => {
    const rep = summarize(Array.from({ length: 21 }, (_, i) => sample(500 * i, 100)), 'ok');
    expect(rep).toMatchObject({ gpuEnergyJ: 1000, gpuEnergySeconds: 10, gpuPowerMeanW: 100 });
    const both = mergeTelemetry([rep, rep]);
    expect(both).toMatchObject({ gpuEnergyJ: 2000, gpuEnergySeconds: 20 });
    expect(energyPerSample(both, 50)).toEqual({ energy: { joulesPerSample: 2, samplesPerJoule: 0.5, meanPowerW: 100, seconds: 20 }, missing: null });
    // A window without power readings makes the sum unknown, said so.
    const cpu = summarize([{ t: 0, gpus: [], host }], 'no NVIDIA GPU found');
    expect(energyPerSample(mergeTelemetry([rep, cpu]), 50)).toEqual({ energy: null, missing: 'no GPU power readings over the measured steps (NVIDIA H100)' });
    expect(energyPerSample(cpu, 50)).toEqual({ energy: null, missing: 'no GPU power readings over the measured steps (no NVIDIA GPU found)' });
    // Steps shorter than the sampling period: one reading, which spans no time; what to do is said.
    expect(energyPerSample(summarize([sample(0, 100)], 'ok'), 50).missing).toMatch(/^one telemetry sample fell in the measured steps, and energy needs two .*: measure more steps$/);
  });

  it('merges windows into the mean over every sample, as a chart of the samples shows it', () => {
    const long = summarize(Array.from({ length: 3 }, (_, i) => sample(500 * i, 100)), 'ok');
    const short = summarize([sample(0, 40)], 'ok');
    // (3 x 100 + 1 x 40) / 4 samples: not the mean of the two windows' means, 70.
    expect(mergeTelemetry([long, short]).gpuPowerMeanW).toBeCloseTo(85, 12);
  });
});
