// The CUDA backend's host-side rules, proven without a GPU: headers of
// native/src/cuda that need no CUDA are compiled here with small C++ drivers
// (test/native/cuda-host/). parity_replay runs the GPU parity checks' own cases
// and scoring (parity_cases.h) on the device's arithmetic, replayed on the host:
// a correct fp32 result must pass every seed the GPU test runs, and a NaN or a
// real bug must fail. runtime_rules covers the allocator's stream-ordered reuse,
// readout's reset and the dropout masks' inputs.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { REPO_ROOT } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const tmp = tempDir('trainbench-cuda-host-');
const PROGRAMS = ['parity_replay', 'runtime_rules'] as const;

beforeAll(() => {
  const cxx = process.env.CXX ?? 'c++';
  for (const program of PROGRAMS) {
    // -ffp-contract=off: the replay fuses exactly where the device does (std::fmaf), nowhere else.
    execFileSync(cxx, ['-std=c++17', '-O2', '-ffp-contract=off', '-I', path.join(REPO_ROOT, 'native', 'src'),
      path.join(__dirname, 'cuda-host', `${program}.cpp`), '-o', path.join(tmp.dir, program)], { stdio: 'inherit' });
  }
}, 120_000);
afterAll(() => tmp.cleanup());

function run(program: (typeof PROGRAMS)[number], check: string): void {
  const r = spawnSync(path.join(tmp.dir, program), [check], { encoding: 'utf8' });
  expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
}

describe('GPU parity rules, replayed on the host', () => {
  it.each([
    ['nan-aggregates', 'every error aggregate propagates NaN (max_rel, norm_rel, worst, scaled errors)'],
    ['nan-output-fails', 'a kernel output with one NaN fails its check'],
    ['gemm-f32-orders-pass', "fp32 GEMM in the kernel's order and split-K passes all 8 seeds (K up to 300)"],
    ['gemm-engine-orders-pass', "gemm_engine's and gemm_lt_fp32's cases pass whichever path sums them (K up to 400)"],
    ['gemm-detects-errors', 'a GEMM missing one product still fails'],
    ['conv2d', "convolution through the device's GEMMs passes; a weight gradient missing a sample fails"],
    ['widen-u8', 'widen_u8 passes fused or not; a wrong offset fails'],
    ['batchnorm-eval', 'eval batch norm passes with rsqrtf 2 ulp off; a missing eps fails'],
    ['batchnorm-train', "training batch norm passes with the kernel's arithmetic; a missing eps, a biased running variance, a statistic missing one element or a NaN fails"],
    ['soft-losses', "soft-target cross-entropy and BCE pass with the kernels' arithmetic; a NaN, a loss 1e-4 off or a division by the weighted rows' count fails"],
  ])('%s: %s', (check) => run('parity_replay', check));
});

describe('CUDA runtime rules on the host', () => {
  it.each([
    ['block-cache-stream-order', "a freed block goes to another stream only after its free event completed; to its own at once"],
    ['block-cache-best-fit', 'the smallest usable cached block, at most twice the request'],
    ['readout-reset', 'readout clears the sums and keeps the loss scale, step count and norm'],
    ['dropout-seed', 'dropout masks depend on the step seed, the layer and the micro-batch index only'],
  ])('%s: %s', (check) => run('runtime_rules', check));
});
