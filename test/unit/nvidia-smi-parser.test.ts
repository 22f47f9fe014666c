import { readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { decodeReasons, parseNvidiaSmiLine, queryArgs } from '../../src-main/core/telemetry/nvidia-smi-parser';
import { FIXTURES } from '../helpers/fake-nvidia-smi';

const lines = (name: string) => readFileSync(path.join(FIXTURES, name), 'utf8').split('\n').map(parseNvidiaSmiLine).filter((p) => p.kind !== 'skip');
const gpus = (name: string) => lines(name).map((p) => (p.kind === 'gpu' ? p.sample : null));

describe('nvidia-smi CSV parser', () => {
  it('asks for every field the sampler needs, without units or header', () => {
    const args = queryArgs(500, 'clocks_event_reasons.active');
    expect(args[0]).toBe(
      '--query-gpu=index,uuid,name,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.mem,pcie.link.gen.current,pcie.link.width.current,clocks_event_reasons.active',
    );
    expect(args.slice(1)).toEqual(['--format=csv,noheader,nounits', '-lms', '500']);
  });

  it('reads one GPU', () => {
    const [first, second] = gpus('one-gpu.txt');
    expect(first).toEqual({
      index: 0,
      uuid: 'GPU-6f1b9c2e-3a4d-4e8f-9012-3456789abcde',
      name: 'NVIDIA H100 80GB HBM3',
      utilizationGpu: 97,
      utilizationMemory: 58,
      memoryUsedMiB: 61234,
      memoryTotalMiB: 81559,
      temperatureC: 64,
      powerDrawW: 612.47,
      powerLimitW: 700,
      clockSmMHz: 1980,
      clockMemMHz: 2619,
      pcieGen: 5,
      pcieWidth: 16,
      throttleReasons: [],
    });
    expect(second?.throttleReasons).toEqual(['sw_power_cap']);
  });

  it('reads several GPUs, each line its own index', () => {
    const all = gpus('multi-gpu.txt');
    expect(all).toHaveLength(8);
    expect(all.slice(0, 4).map((g) => g?.index)).toEqual([0, 1, 2, 3]);
    expect(all[2]?.pcieWidth).toBe(8);
    expect(all[3]?.throttleReasons).toEqual(['gpu_idle']);
    expect(all[6]?.throttleReasons).toEqual(['sw_thermal_slowdown', 'hw_thermal_slowdown']);
  });

  it('turns [N/A] and [Not Supported] into null', () => {
    const [g] = gpus('na-not-supported.txt');
    expect(g).toMatchObject({ name: 'NVIDIA GeForce RTX 3060 Laptop GPU', powerDrawW: 38.12, powerLimitW: null, pcieWidth: null, throttleReasons: null });
  });

  it('handles a MIG-enabled GPU beside a normal one', () => {
    const [mig, normal] = gpus('mig.txt');
    expect(mig).toMatchObject({ index: 0, utilizationGpu: null, utilizationMemory: null, memoryUsedMiB: 11234 });
    expect(normal).toMatchObject({ index: 1, utilizationGpu: 64 });
  });

  it('reports the driver error line as an error, word for word', () => {
    expect(lines('driver-error.txt')).toEqual([
      { kind: 'error', message: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running." },
    ]);
  });

  it('refuses a truncated last line instead of guessing', () => {
    const parsed = lines('truncated.txt');
    expect(parsed[0].kind).toBe('gpu');
    expect(parsed[1]).toEqual({ kind: 'error', message: expect.stringMatching(/^incomplete nvidia-smi line \(3 of 15 fields\)/) });
  });

  it('decodes the reason mask and refuses non-hex', () => {
    expect(decodeReasons('0x0000000000000084')).toEqual(['sw_power_cap', 'hw_power_brake_slowdown']);
    expect(decodeReasons('Active')).toBeNull();
  });
});
