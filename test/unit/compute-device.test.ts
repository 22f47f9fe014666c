import { describe, expect, it } from 'vitest';

import type { Devices } from '../../src-main/api/devices';
import { describeComputeDevice, emulationWarning } from '../../src-main/core/common/compute-device';

const cpu = { name: 'AMD Ryzen 9 7950X', arch: 'x64', logicalCores: 32, simd: ['avx2'] };
const h200 = { index: 0, name: 'NVIDIA H200', totalMemoryBytes: 150e9, computeCapability: '9.0', multiprocessors: 132, pciBusId: '0000:00:05.0' };
const devices = (cuda: Partial<Devices['cuda']>): Devices => ({
  cpu,
  cuda: { compiled: true, available: true, reason: null, driverVersion: 13000, runtimeVersion: 13000, devices: [h200], ...cuda },
});

describe('the device a run is recorded as computing on', () => {
  it('names a real GPU without calling it emulated', () => {
    const d = describeComputeDevice(devices({}), 'cuda:0');
    expect(d).toEqual({ id: 'cuda:0', name: 'NVIDIA H200' });
    expect(emulationWarning(d)).toBeNull();
  });

  it('resolves auto as the engine does: the first GPU when there is one, else the CPU', () => {
    expect(describeComputeDevice(devices({}), 'auto').id).toBe('cuda:0');
    expect(describeComputeDevice(devices({ available: false, devices: [] }), 'auto')).toEqual({ id: 'cpu', name: cpu.name });
  });

  it('marks the emulated device, and says its timings are not GPU figures', () => {
    const emu = describeComputeDevice(devices({ emulated: true, devices: [{ ...h200, name: 'Trainbench emulated CUDA device, emulated (CPU)' }] }), 'cuda:0');
    expect(emu.emulated).toBe(true);
    expect(emulationWarning(emu)).toMatch(/^cuda:0 is the emulated CUDA device, emulated \(CPU\): .*not GPU figures/);
  });

  it('names a missing GPU as not present rather than guessing', () => {
    expect(describeComputeDevice(devices({}), 'cuda:3').name).toBe('not present');
  });
});
