import { readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { conditionsDiffer, conditionsSummary, confounders } from '../../src-main/api/confounders';
import type { Conditions, TelemetrySample } from '../../src-main/api/telemetry';
import { ConditionsSchema } from '../../src-main/api/telemetry';
import type { RunRecordJson } from '../../src-main/api/run-record';
import { confounderDifference } from '../../src-main/core/check/check-service';
import { gateVerdict } from '../../src-main/core/check/gate-verdict';
import { gpuConditions } from '../../src-main/core/telemetry/conditions';
import { parseComputeApps, parseNvidiaSmiLine } from '../../src-main/core/telemetry/nvidia-smi-parser';
import { FIXTURES } from '../helpers/fake-nvidia-smi';

const quiet: Conditions = { seconds: 2, cores: 8, targetCpuCores: 7.5, otherCpuCores: 0.1, cpuMHz: { start: 3600, end: 3600 }, gpuSlowdown: {}, gpuSmClockMHz: 1980, gpuTemperatureMaxC: 60, gpuOtherProcesses: [] };
const names: [string, string] = ['A', 'B'];

/** The telemetry samples of a recorded fixture, one per period, as the service would have stored them. */
function samples(fixture: string): TelemetrySample[] {
  const host = { cpuPerCore: [], memUsedBytes: 0, memAvailableBytes: 0, memTotalBytes: 0, swapUsedBytes: 0, swapTotalBytes: 0, diskReadBytesPerSec: null, diskWriteBytesPerSec: null, engineHost: null };
  return readFileSync(path.join(FIXTURES, fixture), 'utf8')
    .split(/\n\s*\n/)
    .map((block, i) => ({ t: i * 500, host, gpus: block.split('\n').map(parseNvidiaSmiLine).flatMap((p) => (p.kind === 'gpu' ? [p.sample] : [])) }));
}

describe('the conditions of a measured window', () => {
  it('reads the GPU slowdown share, the median SM clock and the hottest reading from recorded nvidia-smi output', () => {
    // one-gpu.txt: three periods, the second at its power cap (0x4) with the clock at 1755 MHz.
    expect(gpuConditions(samples('one-gpu.txt'))).toEqual({ gpuSlowdown: { sw_power_cap: 1 / 3 }, gpuSmClockMHz: 1980, gpuTemperatureMaxC: 65 });
    expect(gpuConditions([])).toEqual({ gpuSlowdown: {}, gpuSmClockMHz: null, gpuTemperatureMaxC: null });
  });

  it('parses the GPU compute processes, names with commas and unreported memory included, and skips what is not a process', () => {
    expect(parseComputeApps(readFileSync(path.join(FIXTURES, 'compute-apps.txt'), 'utf8'))).toEqual([
      { pid: 48211, name: '/usr/bin/python3', usedMiB: 20480 },
      { pid: 48377, name: '/home/rig/miniconda3/envs/llm/bin/python', usedMiB: 8120 },
      { pid: 3391, name: '/usr/lib/xorg/Xorg', usedMiB: null },
    ]);
    expect(parseComputeApps('7, train, v2.py, 100\nNo running processes found\n')).toEqual([{ pid: 7, name: 'train, v2.py', usedMiB: 100 }]);
    expect(parseComputeApps(readFileSync(path.join(FIXTURES, 'driver-error.txt'), 'utf8'))).toEqual([]);
    expect(parseComputeApps('1, x, 1\n'.repeat(1000))).toHaveLength(256);
  });

  it('refuses a tampered conditions record: too many slowdown reasons, a negative window', () => {
    const reasons = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`r${i}`, 0.5]));
    expect(ConditionsSchema.safeParse({ ...quiet, gpuSlowdown: reasons }).success).toBe(false);
    expect(ConditionsSchema.safeParse({ ...quiet, seconds: -1 }).success).toBe(false);
    expect(ConditionsSchema.safeParse(quiet).success).toBe(true);
  });
});

describe('confounders', () => {
  it('names nothing on a quiet machine, and each neighbour with its number', () => {
    expect(confounders(quiet)).toEqual([]);
    const crowded: Conditions = { ...quiet, targetCpuCores: 5, otherCpuCores: 3, cpuMHz: { start: 3600, end: 2400 }, gpuSlowdown: { hw_thermal_slowdown: 0.5 }, gpuOtherProcesses: ['python3 (4242)'] };
    expect(confounders(crowded).map((c) => c.words)).toEqual([
      'other processes used 3.00 cores of 8 while the target used 5.00 cores',
      'the CPU clock moved from 3600 to 2400 MHz',
      'the GPU was slowed by the hardware for heat in 50% of the samples',
      'other processes on the GPU: python3 (4242)',
    ]);
  });

  it('counts other load only when it competes with the target for the cores', () => {
    // 3 cores of other load beside a target using 1 of 8: a free core was always there.
    expect(confounders({ ...quiet, targetCpuCores: 1, otherCpuCores: 3 })).toEqual([]);
    expect(confounders({ ...quiet, targetCpuCores: 7, otherCpuCores: 0.8 }).map((c) => c.kind)).toEqual(['cpu-load']);
    // Unknown (a short window, another OS): never a confounder.
    expect(confounders({ ...quiet, targetCpuCores: null, otherCpuCores: null })).toEqual([]);
  });

  it('tells two windows apart by what differs, and leaves alike ones alone', () => {
    expect(conditionsDiffer(quiet, { ...quiet }, names)).toBeNull();
    expect(conditionsDiffer(quiet, null, names)).toBeNull();
    expect(conditionsDiffer(quiet, { ...quiet, targetCpuCores: 6.5, otherCpuCores: 1.5 }, names)).toBe('other processes used 0.10 cores during A and 1.50 cores during B');
    // Both sides crowded alike: the same conditions, whatever they are.
    expect(conditionsDiffer({ ...quiet, targetCpuCores: 6, otherCpuCores: 2 }, { ...quiet, targetCpuCores: 6, otherCpuCores: 2.1 }, names)).toBeNull();
    expect(conditionsDiffer(quiet, { ...quiet, cpuMHz: { start: 2800, end: 2800 } }, names)).toBe('the CPU clock was 3600 MHz during A and 2800 MHz during B');
    expect(conditionsDiffer(quiet, { ...quiet, gpuSlowdown: { hw_thermal_slowdown: 1 }, gpuSmClockMHz: 1410 }, names)).toBe(
      "the GPU was slowed by the hardware for heat in 0% of A's samples and 100% of B's; the GPU's SM clock was 1980 MHz during A and 1410 MHz during B",
    );
    expect(conditionsDiffer(quiet, { ...quiet, gpuOtherProcesses: ['python3 (4242)'] }, names)).toBe('other GPU processes during A: none; during B: python3');
    // The same program under another pid is the same neighbour.
    expect(conditionsDiffer({ ...quiet, gpuOtherProcesses: ['Xorg (10)'] }, { ...quiet, gpuOtherProcesses: ['Xorg (11)'] }, names)).toBeNull();
  });

  it('does not call a GPU flickering at its power limit a difference, nor a clock that moves with it', () => {
    const capped = (share: number, clock: number): Conditions => ({ ...quiet, gpuSlowdown: { sw_power_cap: share }, gpuSmClockMHz: clock });
    expect(conditionsDiffer(capped(0.3, 1980), capped(0.7, 1800), names)).toBeNull();
    expect(conditionsDiffer(capped(0.6, 1980), { ...quiet, gpuSlowdown: {} }, names)).toBe("the GPU was held at its power limit in 60% of A's samples and 0% of B's");
  });

  it('sums a comparison up per side for the CLI and the cards', () => {
    const row = (pair: number, side: 'best' | 'candidate', c: Conditions, remeasured: string | null = null) => ({ pair, side, samplesPerSec: 1, conditions: c, remeasured });
    const hog = { ...quiet, targetCpuCores: 6.5, otherCpuCores: 1.5 };
    expect(conditionsSummary([row(1, 'best', quiet, 'x'), row(1, 'candidate', hog, 'x'), row(1, 'best', quiet), row(1, 'candidate', quiet)])).toBe(
      'best: no other load competing; candidate: other processes used 1.50 cores of 8 while the target used 6.50 cores; 1 pair measured again',
    );
    expect(conditionsSummary([])).toBeNull();
    const short = { ...quiet, seconds: 0.2, targetCpuCores: null, otherCpuCores: null };
    expect(conditionsSummary([row(1, 'best', short), row(1, 'candidate', short)])).toBe('best: CPU load not measured (windows under 0.5 s); candidate: CPU load not measured (windows under 0.5 s)');
  });
});

describe('the regression gate and the conditions of two runs', () => {
  const run = (...windows: unknown[]) => ({ result: { repetitions: windows.map((conditions) => ({ samplesPerSec: 100, telemetry: { conditions } })) } }) as unknown as RunRecordJson;
  const hog: Conditions = { ...quiet, targetCpuCores: 6.5, otherCpuCores: 1.5 };

  it('cannot decide when other load crowded one run and not the other, and lists what each saw', () => {
    const { confounders, difference } = confounderDifference(run(quiet, quiet), run(quiet, hog));
    expect(confounders).toEqual({ against: [], now: ['other processes used 1.50 cores of 8 while the target used 6.50 cores'] });
    expect(difference).toBe('confounded: the saved run saw nothing else competing, this one other processes used 1.50 cores of 8 while the target used 6.50 cores');
    const verdict = gateVerdict([100, 101, 99], [100, 100, 101], 0.05, [difference!]);
    expect(verdict).toMatchObject({ outcome: 'undecided', exitCode: 2 });
    expect(verdict.text).toMatch(/^could not decide: the saved run was measured under other conditions \(confounded: /);
  });

  it('decides when both saw the same neighbours, and says nothing about runs that recorded no conditions or tampered ones', () => {
    expect(confounderDifference(run(hog, quiet), run(quiet, hog)).difference).toBeNull();
    expect(confounderDifference(run(), run(hog)).difference).toBeNull();
    // A workspace file is data: conditions that do not read are left out, never trusted.
    expect(confounderDifference(run({ ...hog, otherCpuCores: 'lots' }), run(hog))).toEqual({ confounders: { against: [], now: [expect.any(String)] }, difference: null });
  });
});
