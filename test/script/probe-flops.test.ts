// Issue 26 item 2 for scripts: the probe counts the model's forward FLOPs in one training iteration
// (Linear and Conv layers, an estimate) and a benchmark gives the utilisation against torch's own matmul rate.
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { formatBenchmark } from '../../src-main/cli/benchmark-format';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import type { Interpreter } from './probe-run';
import { INTERPRETERS, kindOf, runProbed, TORCH2 } from './probe-run';
import { runCli, SCRIPTS } from './script-helpers';
import { BenchmarkResultSchema } from '../../src-main/api/benchmark-result';
import { scriptBenchmark } from '../helpers/target-detail';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

const probed = (python: string, script: string, args: string[] = [], set: Record<string, unknown> = {}) =>
  runProbed([python, path.join(SCRIPTS, script), ...args], { env: { TB_PROBE_WARMUP: '2', TB_PROBE_STEPS: '3', TB_PROBE_SET: JSON.stringify(set) } });

/**
 * cnn_tutorial.py's Net(width 8) on 1x28x28, a multiply-add being 2 FLOPs:
 * conv1 1->8, 3x3, out 26x26: 2*9*8*676 = 97,344; pool to 13x13; conv2 8->16, 3x3, out 11x11: 2*72*16*121 = 278,784;
 * pool to 5x5; fc1 400->64: 51,200; fc2 64->32: 4,096; fc3 32->10: 640. In all 432,064 per sample.
 */
const CNN_FORWARD_FLOPS = 97_344 + 278_784 + 51_200 + 4_096 + 640;

describe.each(INTERPRETERS)('the probe counts the forward FLOPs on $label', (t: Interpreter) => {
  it.skipIf(!t.python)('exactly, for a Linear layer and for the tutorial CNN, once, in the first iteration', async () => {
    const linear = await probed(t.python!, 'tiny_train.py');
    expect(linear.code, linear.stderr).toBe(0);
    // nn.Linear(16, 1): 16 multiply-adds per sample. Counted over iteration 1 only, however many forwards ran since.
    expect(kindOf(linear.processes[0], 'flops')).toEqual([{ type: 'flops', step: 1, forwardPerSample: 32, recomputePerSample: 0, layers: 1, method: expect.stringMatching(/^forward hooks on Linear and Conv layers/) }]);
    const cnn = await probed(t.python!, 'cnn_tutorial.py', ['--steps', '6']);
    expect(cnn.code, cnn.stderr).toBe(0);
    expect(kindOf(cnn.processes[0], 'flops')).toEqual([expect.objectContaining({ step: 1, forwardPerSample: CNN_FORWARD_FLOPS, layers: 5 })]);
    // The matmul rate is measured only when a benchmark asks (TB_PROBE_PEAK).
    expect(kindOf(cnn.processes[0], 'peak')).toEqual([]);
  }, 120_000);
});

describe.each(INTERPRETERS)('through activation checkpointing on $label (issue 38)', (t: Interpreter) => {
  it.skipIf(!t.python)('counts the layers a reentrant checkpoint runs under no_grad, and the recomputation in the backward apart', async () => {
    // probe_loops.py checkpoint: 6 checkpointed Linear(64, 64) blocks and a Linear(64, 1) head; iteration 1 checkpoints reentrantly.
    const r = await runProbed([t.python!, path.join(SCRIPTS, 'probe_loops.py'), 'checkpoint'], { env: { TB_PROBE_WARMUP: '2', TB_PROBE_STEPS: '3' } });
    expect(r.code, r.stderr).toBe(0);
    const blocks = 6 * 2 * 64 * 64;
    // Before: 128 per sample (the head alone), the blocks' forward under no_grad missed.
    expect(kindOf(r.processes[0], 'flops')).toEqual([expect.objectContaining({ step: 1, forwardPerSample: blocks + 2 * 64, recomputePerSample: blocks, layers: 7 })]);
  }, 120_000);
});

describe.skipIf(!TORCH2.python)(`under torch.compile (${TORCH2.label})`, () => {
  it('counts nothing and says why: hooks added and removed around compiled code would recompile it', async () => {
    const r = await probed(TORCH2.python!, 'cnn_tutorial.py', ['--steps', '6'], { 'compile.mode': 'default' });
    expect(r.code, r.stderr).toBe(0);
    expect(kindOf(r.processes[0], 'flops')).toEqual([expect.objectContaining({ forwardPerSample: null, method: 'not counted: the script uses torch.compile' })]);
  }, 180_000);
});

describe('trainbench benchmark-training -- <CNN script>', () => {
  it('gives the model-FLOPs utilisation against torch\'s matmul rate on this CPU, in (0, 100%], and says it is an estimate', async () => {
    const { code, stdout, stderr } = await runCli(
      ['benchmark-training', '--json', '--repeat', '2', '--steps', '10', '--warmup-steps', '2', '--workspace', ws.dir, '--', INTERPRETERS[0].python!, path.join(SCRIPTS, 'cnn_tutorial.py'), '--steps', '20'],
      240_000,
    );
    expect(code, stderr).toBe(0);
    const r = scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(stdout)));
    expect(r.target.flops).toMatchObject({ forwardPerSample: CNN_FORWARD_FLOPS, layers: 5 });
    const u = r.utilisation!;
    expect(u.trainingFlopsPerSample).toBe(3 * CNN_FORWARD_FLOPS);
    expect(u.achievedGflops).toBeCloseTo((3 * CNN_FORWARD_FLOPS * r.samplesPerSec) / 1e9, 9);
    expect(u.measured!.how).toMatch(/^torch\.mm on cpu on \d+ threads?, best of 5$/);
    expect(u.measured!.mfu).toBeGreaterThan(0);
    expect(u.measured!.mfu).toBeLessThanOrEqual(1);
    expect(u.datasheet).toBeNull();
    const text = formatBenchmark(r);
    expect(text).toMatch(/^utilisation [\d.]+ GFLOP\/s of model arithmetic: \d+\.\d% of the \d+ GFLOP\/s measured on this device \(torch\.mm on cpu/m);
    expect(text).toContain('an estimate: 432,064 forward FLOPs per sample counted by forward hooks on Linear and Conv layers');
  }, 240_000);
});
