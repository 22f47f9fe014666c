// The precision of a script's utilisation (issue 26 item 2): torch's fp32 matmuls run on TensorFloat-32 where the
// script or an override allows it (matmul.precision=high), so the datasheet figure compared with is TF32's, not fp32's.
import { describe, expect, it } from 'vitest';

import { utilisationText } from '../../src-main/api/utilisation-words';
import { datasheetPeak } from '../../src-main/core/stats/datasheet-peaks';
import { ProbeMessageSchema } from '../../src-main/core/script/probe-messages';
import { scriptUtilisation } from '../../src-main/core/targets/script/script-benchmark';

describe("the datasheet precision of a script's utilisation", () => {
  const flops = { forwardPerSample: 1_337_344, layers: 3, method: 'forward hooks' };
  it('TF32 where torch ran its fp32 matmuls on TensorFloat-32 (matmul.precision=high on the H100 of 2026-11-27), fp32 otherwise', () => {
    const tf32 = scriptUtilisation([{ flops, peak: { gflops: 379_110, shape: '4096^3 tf32', how: 'torch.mm on cuda:0, best of 5', precision: 'tf32' } }], 18_654, 'cuda:0', 'NVIDIA H100 80GB HBM3');
    expect(tf32.utilisation?.datasheet).toMatchObject({ device: 'H100 SXM', precision: 'tf32', gflops: 494_700 });
    expect(utilisationText(tf32.utilisation!)).toMatch(/of the 379110 GFLOP\/s measured on this device \(torch\.mm on cuda:0, best of 5, 4096\^3 tf32\); 0\.0% of the H100 SXM datasheet's 494\.7 TFLOP\/s tf32$/);
    const fp32 = scriptUtilisation([{ flops, peak: { gflops: 51_077, shape: '4096^3 fp32', how: 'torch.mm on cuda:0, best of 5', precision: 'fp32' } }], 22_197, 'cuda:0', 'NVIDIA H100 80GB HBM3');
    expect(fp32.utilisation?.datasheet).toMatchObject({ precision: 'fp32', gflops: 67_000 });
    // No peak measured: fp32, the precision of the tensors.
    expect(scriptUtilisation([{ flops, peak: null }], 1000, 'cuda:0', 'NVIDIA A100-SXM4-40GB').utilisation?.datasheet).toMatchObject({ precision: 'fp32', gflops: 19_500 });
    expect(datasheetPeak('NVIDIA A100-SXM4-40GB')?.tflops.tf32).toBe(156);
    // A sheet without a TF32 figure gives no datasheet comparison rather than the fp32 one.
    expect(datasheetPeak('NVIDIA GeForce RTX 3050')?.tflops.tf32).toBeUndefined();
  });

  it("the probe's peak message takes fp32 or tf32 only (older probes send none: fp32)", () => {
    const peak = { type: 'peak', gflops: 100, shape: '512^3 fp32', how: 'x' };
    expect(ProbeMessageSchema.safeParse(peak).success).toBe(true);
    expect(ProbeMessageSchema.safeParse({ ...peak, precision: 'tf32' }).success).toBe(true);
    expect(ProbeMessageSchema.safeParse({ ...peak, precision: 'fp8' }).success).toBe(false);
  });
});
