// Model-FLOPs utilisation (issue 26 item 2): achieved training FLOP/s against the peak measured on the device
// and its datasheet peak; above 100% of either is a measurement error, given as a problem, never as a result.
import { describe, expect, it } from 'vitest';

import { datasheetPeak } from '../../src-main/core/stats/datasheet-peaks';
import { utilisationText } from '../../src-main/api/utilisation-words';
import { utilisationOf } from '../../src-main/core/stats/utilisation';

const peak = { gflops: 200, shape: '512^3 fp32', how: "the engine's avx512 kernel on 2 threads, best of 5" };

describe('model FLOPs utilisation', () => {
  it('on the CPU: three forward passes of FLOPs per sample, against the measured peak only', () => {
    const u = utilisationOf({ flopsPerSample: 1e6, samplesPerSec: 20_000, peak, peakMissing: '', deviceName: 'Intel(R) Xeon(R) Processor', cuda: false, precision: 'fp32' });
    expect(u.trainingFlopsPerSample).toBe(3e6);
    expect(u.achievedGflops).toBe(60);
    expect(u.measured?.mfu).toBeCloseTo(0.3, 12);
    expect(u.datasheet).toBeNull();
    expect(u.problems).toEqual([]);
    expect(utilisationText(u)).toBe(
      "60.0 GFLOP/s of model arithmetic: 30.0% of the 200 GFLOP/s measured on this device (the engine's avx512 kernel on 2 threads, best of 5, 512^3 fp32); no datasheet peak (a CPU, or a device not in the table)",
    );
  });

  it('above 100% of a peak: a measurement error, its MFU left out', () => {
    const u = utilisationOf({ flopsPerSample: 1e6, samplesPerSec: 100_000, peak, peakMissing: '', deviceName: 'cpu', cuda: false, precision: 'fp32' });
    expect(u.measured?.mfu).toBeNull();
    expect(u.problems).toEqual(['150.0% of the peak measured on this device (200 GFLOP/s) is impossible: a measurement error (FLOPs per sample overcounted, or the peak measured at other clocks), not a result']);
  });

  it('on a GPU in the table: the datasheet peak in the precision trained, with its source; none where the sheet gives none', () => {
    const h100 = utilisationOf({ flopsPerSample: 1e9, samplesPerSec: 100_000, peak: null, peakMissing: 'no GPU here', deviceName: 'NVIDIA H100 80GB HBM3', cuda: true, precision: 'bf16' });
    expect(h100.datasheet).toMatchObject({ device: 'H100 SXM', precision: 'bf16', gflops: 989_400 });
    expect(h100.datasheet?.mfu).toBeCloseTo(300_000 / 989_400, 12);
    expect(h100.datasheet?.source).toMatch(/H100 Tensor Core GPU datasheet/);
    expect(h100.measured).toBeNull();
    expect(h100.measuredMissing).toBe('no GPU here');
    expect(datasheetPeak('NVIDIA H100 PCIe')?.device).toBe('H100 PCIe');
    expect(datasheetPeak('NVIDIA GeForce RTX 4090')?.tflops.bf16).toBe(165.2);
    expect(datasheetPeak('NVIDIA GeForce RTX 3050')?.tflops.bf16).toBeUndefined();
    expect(utilisationOf({ flopsPerSample: 1, samplesPerSec: 1, peak: null, peakMissing: '', deviceName: 'NVIDIA GeForce RTX 3050', cuda: true, precision: 'bf16' }).datasheet).toBeNull();
    expect(datasheetPeak('NVIDIA GeForce GTX 1080')).toBeNull();
  });
});
