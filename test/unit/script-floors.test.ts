// Issue 26 items 3-4 for scripts, with made-up numbers: the compute and copy floors beside the step, the energy
// per sample of a CUDA script and a CPU script's reason for having none, and the probe's copy message refused when
// tampered with.
import { describe, expect, it } from 'vitest';

import { energyText, floorRows } from '../../src-main/api/utilisation-words';
import { ProbeMessageSchema } from '../../src-main/core/script/probe-messages';
import { CPU_COPY_MISSING, SCRIPT_DATA_FLOOR_MISSING, scriptFloors } from '../../src-main/core/stats/limits';
import { CPU_ENERGY_MISSING, energyPerSample } from '../../src-main/core/telemetry/energy';

const peak = { gflops: 50_000, shape: '4096^3 fp32', how: 'torch.mm on cuda:0, best of 5' };
const copy = { bytesPerBatch: 200_960, seconds: 20e-6, how: '2 tensor(s) of the first training batch, pinned host to cuda:0, CUDA events, best of 5 after a warm-up' };

describe("a script's floors", () => {
  it('compute from the counted FLOPs at the measured matmul rate, copy from the pinned batch copy; the data floor says why it is missing', () => {
    // 3 x 1e6 FLOPs x 64 samples = 1.92e8 FLOPs at 5e13 FLOP/s = 0.00384 ms; the copy 0.02 ms; the step 2.9 ms.
    const f = scriptFloors({ stepMs: 2.9, samplesPerStep: 64, forwardFlopsPerSample: 1e6, flopsMissing: '', peak, peakMissing: '', copy, copyMissing: '' });
    expect(f.compute.stepMs).toBeCloseTo(0.00384, 12);
    expect(f.compute.trainingFlopsPerStep).toBe(1.92e8);
    expect(f.compute.baselineOverFloor).toBeCloseTo(2.9 / 0.00384, 9);
    expect(f.copy.stepMs).toBeCloseTo(0.02, 12);
    expect(f.copy.gbPerSec).toBeCloseTo(10.048, 9);
    expect(f.copy.samplesPerSec).toBeCloseTo(64 / 20e-6, 3);
    expect(f.data).toEqual({ stepMs: null, samplesPerSec: null, baselineOverFloor: null, derivation: SCRIPT_DATA_FLOOR_MISSING });
    expect(f.floorStepMs).toBeCloseTo(0.02, 12);
    expect(f.summary).toBe('The host-to-device copy floor is the highest measured: this script cannot step faster than 0.02 ms (3,200,000 samples/s per rank); its 2.9 ms step is 145x that floor.');
    expect(floorRows(f).map(({ limit, ...row }) => (expect(limit).toBe(f[row.name]), row))).toEqual([
      {
        name: 'compute',
        stepMs: '0.00384 ms',
        over: 'step 755.2x',
        derivation: '3 x 1,000,000 forward FLOPs/sample (an estimate) x 64 samples = 192,000,000 FLOPs per step at 50,000 GFLOP/s (torch.mm on cuda:0, best of 5, 4096^3 fp32) = 0.00384 ms',
      },
      { name: 'copy', stepMs: '0.02 ms', over: 'step 145.0x', derivation: `200,960 bytes per batch at 10 GB/s (${copy.how}) = 0.02 ms` },
      { name: 'data', stepMs: 'n/a', over: '', derivation: SCRIPT_DATA_FLOOR_MISSING },
    ]);
  });

  it('with gradient accumulation, per optimizer step: every micro-batch computed and copied (issue 38)', () => {
    // A Hugging Face Trainer at batch 6 with accumulation 3: 18 samples an optimizer step, 3 copies.
    const f = scriptFloors({ stepMs: 30, samplesPerStep: 18, batchesPerStep: 3, forwardFlopsPerSample: 1e6, flopsMissing: '', peak, peakMissing: '', copy, copyMissing: '' });
    expect(f.compute.trainingFlopsPerStep).toBe(3 * 1e6 * 18);
    expect(f.compute.samplesPerSec).toBeCloseTo((1000 * 18) / f.compute.stepMs!, 6);
    expect(f.compute.derivation).toBe('3 x 1,000,000 forward FLOPs/sample (an estimate) x 18 samples per optimizer step (3 micro-batches of 6) = 54,000,000 FLOPs per step at 50,000 GFLOP/s (torch.mm on cuda:0, best of 5, 4096^3 fp32) = 0.00108 ms');
    expect(f.copy.stepMs).toBeCloseTo(0.06, 12);
    expect(f.copy.derivation).toBe(`3 micro-batches x 200,960 bytes per batch at 10 GB/s (${copy.how}) = 0.06 ms`);
  });

  it('on the CPU: no copy floor, and each missing input named', () => {
    const f = scriptFloors({ stepMs: 5, samplesPerStep: null, forwardFlopsPerSample: 1e6, flopsMissing: '', peak, peakMissing: '', copy: null, copyMissing: CPU_COPY_MISSING });
    expect(f.compute.derivation).toBe('not measured: the probe saw no batch size');
    expect(f.copy.derivation).toBe(`not measured: ${CPU_COPY_MISSING}`);
    expect(f.floorStepMs).toBeNull();
    expect(f.summary).toBe('No floor could be measured for this script.');
    const noPeak = scriptFloors({ stepMs: 5, samplesPerStep: 8, forwardFlopsPerSample: null, flopsMissing: 'the script uses torch.compile', peak: null, peakMissing: 'no rate', copy: null, copyMissing: 'x' });
    expect(noPeak.compute).toMatchObject({ stepMs: null, trainingFlopsPerStep: null, derivation: 'not measured: the script uses torch.compile' });
  });
});

describe("a script benchmark's energy", () => {
  it('mean power over samples/s on CUDA; a CPU script says why it has none', () => {
    const t = { samples: 7, gpuUtilizationMean: 4, gpuUtilizationP95: 20, gpuMemoryPeakMiB: 1031, gpuPowerMeanW: 127, gpuEnergyJ: 133.4, gpuEnergySeconds: 1.04, cpuMean: 7, gpu: 'NVIDIA H100 80GB HBM3' };
    const { energy, missing } = energyPerSample(t, 22_197);
    expect(missing).toBeNull();
    expect(energy!.meanPowerW).toBeCloseTo(133.4 / 1.04, 9);
    expect(energy!.joulesPerSample).toBeCloseTo(133.4 / 1.04 / 22_197, 12);
    expect(energyText({ energy, energyMissing: null })).toBe('5.78 mJ of GPU energy per sample (173 samples/J) at 128 W mean GPU power over 1.0 s of measured steps');
    expect(energyText({ energy: null, energyMissing: CPU_ENERGY_MISSING })).toBe(`not measured: ${CPU_ENERGY_MISSING}`);
  });
});

describe("the probe's copy message", () => {
  const good = { type: 'copy', bytesPerBatch: 200_960, tensors: 2, seconds: 2e-5, gbPerSec: 10.05, how: 'pinned' };
  it('is taken as sent, and refused when a value is tampered with or out of bounds', () => {
    expect(ProbeMessageSchema.safeParse(good).success).toBe(true);
    expect(ProbeMessageSchema.safeParse({ ...good, seconds: null, gbPerSec: null, how: 'not measured: on cuda:0 already' }).success).toBe(true);
    for (const bad of [
      { bytesPerBatch: 1e15 },
      { bytesPerBatch: -1 },
      { bytesPerBatch: 1.5 },
      { seconds: 0 },
      { seconds: 1e9 },
      { gbPerSec: 1e9 },
      { gbPerSec: '10' },
      { tensors: -2 },
      { how: 'x'.repeat(301) },
    ]) {
      expect(ProbeMessageSchema.safeParse({ ...good, ...bad }).success, JSON.stringify(bad)).toBe(false);
    }
  });
});
