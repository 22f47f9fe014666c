// Issue 26 items 3 and 4 for scripts, on the CPU: the probe times no pinned copy (a CPU script copies nothing to a
// device) and labels its matmul rate fp32 (a CPU has no TF32); the benchmark shows the floors side by side, each
// missing one with its reason, and gives no energy figure even when a (fake) nvidia-smi reports GPU power, since
// the GPUs' power is not a CPU script's energy. The CUDA path (the copy timed with CUDA events, the energy of the
// measured windows) runs in tools/device/gpu-session.sh's script steps, which print formatBenchmark.
import { execFileSync } from 'node:child_process';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { formatBenchmark } from '../../src-main/cli/benchmark-format';
import { CPU_COPY_MISSING, SCRIPT_DATA_FLOOR_MISSING } from '../../src-main/core/stats/limits';
import { CPU_ENERGY_MISSING } from '../../src-main/core/telemetry/energy';
import { fakeNvidiaSmi } from '../helpers/fake-nvidia-smi';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import type { Interpreter } from './probe-run';
import { INTERPRETERS, kindOf, PROBE_DIR, runProbed } from './probe-run';
import { runCli, SCRIPTS } from './script-helpers';
import { BenchmarkResultSchema } from '../../src-main/api/benchmark-result';
import { scriptBenchmark } from '../helpers/target-detail';

const ws = tempDir();
const smi = fakeNvidiaSmi('one-gpu.txt');
beforeAll(requireBuilt);
afterAll(() => {
  ws.cleanup();
  smi.cleanup();
});

describe.each(INTERPRETERS)('on the CPU with $label', (t: Interpreter) => {
  it.skipIf(!t.python)('the probe sends its fp32 matmul rate and no copy message', async () => {
    const r = await runProbed([t.python!, path.join(SCRIPTS, 'cnn_tutorial.py'), '--steps', '6'], {
      env: { TB_PROBE_WARMUP: '2', TB_PROBE_STEPS: '3', TB_PROBE_PEAK: '1', TB_PROBE_SET: JSON.stringify({ 'matmul.precision': 'high' }) },
    });
    expect(r.code, r.stderr).toBe(0);
    const [peak] = kindOf(r.processes[0], 'peak');
    // matmul.precision=high allows TF32 on CUDA; on the CPU the matmul stays fp32.
    expect(peak).toMatchObject({ shape: '512^3 fp32', precision: 'fp32' });
    expect(kindOf(r.processes[0], 'copy')).toEqual([]);
  }, 120_000);

  it.skipIf(!t.python)("names the precision CUDA's fp32 matmuls would run in: tf32 once matmul.precision=high allows it, whatever this torch's flag API", () => {
    // The CUDA branch reads only torch.backends flags, which a CPU build has too; a CPU stays fp32.
    const code = [
      'import torch',
      'from trainbench_probe.flops import fp32_matmul_precision as p',
      'a = p(torch, True)',
      'torch.set_float32_matmul_precision("high")',
      'print(a, p(torch, True), p(torch, False))',
    ].join('\n');
    expect(execFileSync(t.python!, ['-c', code], { env: { ...process.env, PYTHONPATH: PROBE_DIR }, encoding: 'utf8' }).trim()).toBe('fp32 tf32 fp32');
  });

  it.skipIf(!t.python)('a benchmark gives the compute floor, says why there is no copy or data floor, and no energy', async () => {
    const { code, stdout, stderr } = await runCli(
      ['benchmark-training', '--json', '--repeat', '2', '--steps', '40', '--warmup-steps', '2', '--workspace', ws.dir, '--', t.python!, path.join(SCRIPTS, 'cnn_tutorial.py'), '--steps', '50'],
      240_000,
      { ...process.env, TRAINBENCH_NVIDIA_SMI: smi.command },
    );
    expect(code, stderr).toBe(0);
    const r = scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(stdout)));
    expect(r.device).toBe('cpu');
    // The fake reports an H100 drawing power: the CPU script still has no energy figure, and says why.
    expect(r.telemetry.gpuPowerMeanW).toBeGreaterThan(0);
    expect(r.energy).toBeNull();
    expect(r.energyMissing).toBe(CPU_ENERGY_MISSING);
    const f = r.target.floors!;
    expect(f.stepMs).toBe(r.stepTime.steadyStateMeanMs);
    expect(f.compute.stepMs).toBeGreaterThan(0);
    expect(f.compute.baselineOverFloor).toBeGreaterThanOrEqual(1); // a step faster than its compute floor would be a measurement error
    expect(f.compute.derivation).toMatch(/^3 x 432,064 forward FLOPs\/sample \(an estimate\) x 64 samples = .* FLOPs per step at .* GFLOP\/s \(torch\.mm on cpu on \d+ threads?, best of 5, 512\^3 fp32\) = .* ms$/);
    expect(f.copy).toMatchObject({ stepMs: null, bytesPerBatch: null, derivation: `not measured: ${CPU_COPY_MISSING}` });
    expect(f.data).toMatchObject({ stepMs: null, derivation: SCRIPT_DATA_FLOOR_MISSING });
    expect(f.floorStepMs).toBe(f.compute.stepMs);
    const text = formatBenchmark(r);
    expect(text).toMatch(/^floors {5}per step and rank, how far the [\d.]+ ms step is from each, and how it was measured$/m);
    expect(text).toMatch(/^ {2}compute +[\d.]+ ms {2}step [\d.]+x +3 x 432,064 forward FLOPs/m);
    expect(text).toContain(`  copy            n/a                not measured: ${CPU_COPY_MISSING}`);
    expect(text).toMatch(/^ {2}The compute floor is the highest measured: this script cannot step faster than/m);
    expect(text).toContain(`energy     not measured: ${CPU_ENERGY_MISSING}`);
  }, 240_000);

  it.skipIf(!t.python)('with gradient accumulation the floors are per optimizer step: every micro-batch computed (issue 38)', async () => {
    // probe_loops.py accumulation: 4 micro-batches of 8 an optimizer step, nn.Linear(16, 32) and (32, 1): 544 multiply-adds a sample.
    const { code, stdout, stderr } = await runCli(
      ['benchmark-training', '--json', '--repeat', '2', '--steps', '3', '--warmup-steps', '2', '--workspace', ws.dir, '--', t.python!, path.join(SCRIPTS, 'probe_loops.py'), 'accumulation', '--iterations', '8'],
      240_000,
    );
    expect(code, stderr).toBe(0);
    const r = scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(stdout)));
    expect(r.target.ranks[0]).toMatchObject({ batchSize: 8, samplesPerStep: 32, batchesPerStep: 4 });
    expect(r.target.floors!.compute.trainingFlopsPerStep).toBe(3 * 1088 * 32);
    expect(r.target.floors!.compute.derivation).toMatch(/^3 x 1,088 forward FLOPs\/sample \(an estimate\) x 32 samples per optimizer step \(4 micro-batches of 8\) = 104,448 FLOPs per step/);
  }, 240_000);
});
