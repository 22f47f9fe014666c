// The race's PyTorch side (bench/pytorch/train_torch.py) on the CPU at a tiny size, on both
// PyTorches: the row it prints says what it did (fused optimiser, compile, CUDA graphs, census)
// and says so honestly where a feature is missing: no CUDA graphs on the CPU, no torch.compile
// on 1.13. Speed is measured by bench/gpu/race.mjs on a GPU, never here.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { writeBoardDumps } from '../../src-main/core/datasets/example-board';
import { REPO_ROOT } from '../helpers/repo';
import { cacheOf, testWorkspace } from '../helpers/datasets';
import { tempDir } from '../helpers/temp-dir';
import { TORCH1, TORCH2 } from '../script/probe-run';

const run = promisify(execFile);
const PYTORCH = path.join(REPO_ROOT, 'bench', 'pytorch');
// The board network, shrunk so that max-autotune compiles it in seconds on two cores.
const SPEC = { family: 'bottleneck_resnet', input: [104, 9, 9], stemWidth: 8, layers: [1, 1], strides: [1, 2], widths: [8, 16], expansion: 4, headChannels: 16, policyClasses: 1496 };

let cacheDir = '';
let inductorCache = '';
const cleanups: (() => void)[] = [];
beforeAll(async () => {
  const t = await testWorkspace();
  cleanups.push(t.cleanup);
  const built = await cacheOf(t.ws, await writeBoardDumps(t.ws, 96, 0), 'race-opponent');
  cacheDir = path.join(t.ws.root, 'datasets', built.dataset.id);
  const cache = tempDir('trainbench-inductor-');
  cleanups.push(cache.cleanup);
  inductorCache = cache.dir;
});
afterAll(() => cleanups.splice(0).forEach((c) => c()));

async function row(python: string, mode: 'eager' | 'compile', extra: string[] = []) {
  const { stdout } = await run(
    python,
    [path.join(PYTORCH, 'train_torch.py'), '--cache', cacheDir, '--spec', JSON.stringify(SPEC), '--batch', '16', '--steps', '3', '--warmup', '2',
      '--mode', mode, '--device', 'cpu', '--workers', '0', '--threads', '1', ...extra],
    { env: { ...process.env, TORCHINDUCTOR_CACHE_DIR: inductorCache }, maxBuffer: 16 << 20 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

const NO_GRAPHS_ON_CPU = { used: false, skipped: 'cpu: CUDA graphs exist only on a CUDA device', graphs: 0, skips: 0 };

describe('the census and CUDA-graph readers (self-tests, no GPU)', () => {
  it('sums kernel time as the union of intervals and counts launches per step', async () => {
    const { stdout } = await run(TORCH1.python!, [path.join(PYTORCH, 'census.py'), '--self-test']);
    expect(stdout).toContain('census self-test passed');
  });

  it.skipIf(!TORCH2.python)(`reports a CUDA-graph skip inductor logs, with its reason (${TORCH2.label})`, async () => {
    const { stdout } = await run(TORCH2.python!, [path.join(PYTORCH, 'cuda_graphs.py')]);
    expect(stdout).toContain('cuda_graphs self-test passed');
  });
});

describe(`the race's PyTorch side on the CPU (${TORCH1.label})`, () => {
  it('runs eager with AMP bf16 and channels_last, and says the optimiser is not fused and why', async () => {
    const r = await row(TORCH1.python!, 'eager', ['--census-steps', '2']);
    expect(r).toMatchObject({ mode: 'eager', precision: 'bf16', batch: 16, steps: 3, memoryFormat: 'channels_last', device: 'cpu', cudnnBenchmark: true });
    expect(r.samplesPerSec).toBeGreaterThan(0);
    expect(Number.isFinite(r.finalLoss)).toBe(true);
    expect(Object.keys(r.phasesMs)).toEqual(['data', 'h2d', 'forward', 'loss', 'backward', 'optimizer']);
    expect(r.optimizer).toMatchObject({ kind: 'sgd', momentum: 0.9, fused: false, why: expect.stringContaining('has no fused sgd') });
    expect(r.compile).toMatchObject({ requested: false, mode: null });
    expect(r.cudaGraphs).toEqual(NO_GRAPHS_ON_CPU);
    expect(r.census).toMatchObject({ device: 'cpu', steps: 2, kernelBusyMsPerStep: 0, topKernels: [] });
    expect(r.census.profiledWallMsPerStep).toBeGreaterThan(0);
  }, 120_000);

  it('answers --mode compile with a row that says torch.compile is missing, without timing eager under its name', async () => {
    const r = await row(TORCH1.python!, 'compile');
    expect(r.compile).toMatchObject({ requested: true, available: false, why: expect.stringMatching(/has no torch\.compile/) });
    expect(r.samplesPerSec).toBeNull();
    expect(r.cudaGraphs).toEqual(NO_GRAPHS_ON_CPU);
  }, 120_000);
});

describe.skipIf(!TORCH2.python)(`the race's PyTorch side on the CPU (${TORCH2.label})`, () => {
  it('uses the fused SGD in eager', async () => {
    const r = await row(TORCH2.python!, 'eager');
    expect(r.optimizer).toMatchObject({ kind: 'sgd', fused: true, why: null });
    expect(r.cudaGraphs).toEqual(NO_GRAPHS_ON_CPU);
  }, 120_000);

  it('compiles the whole step with max-autotune, times it as one phase and says CUDA graphs were not used on the CPU', async () => {
    const r = await row(TORCH2.python!, 'compile', ['--census-steps', '2']);
    expect(r.compile).toMatchObject({ requested: true, available: true, mode: 'max-autotune', scope: 'whole step', why: null });
    expect(r.compile.warmupSeconds).toBeGreaterThan(0);
    expect(r.samplesPerSec).toBeGreaterThan(0);
    expect(Number.isFinite(r.finalLoss)).toBe(true);
    expect(Object.keys(r.phasesMs)).toEqual(['data', 'h2d', 'forward']);
    // The fused kernel is opaque to dynamo and would run outside the graphs: the foreach form is traced into them.
    expect(r.optimizer).toMatchObject({ kind: 'sgd', fused: false, foreach: true });
    expect(r.cudaGraphs).toEqual(NO_GRAPHS_ON_CPU);
    expect(r.census).toMatchObject({ device: 'cpu', steps: 2, devicePerStep: { kernel: 0, copy: 0, memset: 0, total: 0 } });
  }, 600_000);
});
