// Whole training steps on the CUDA backend against the CPU backend, mixed
// precision, fp16 loss scaling, OOM recovery, CUDA graphs and dropout. Runs
// where a CUDA device is present (`npm run test:gpu`); elsewhere it skips with
// the reason, or fails with it under TB_REQUIRE_GPU=1 (gpu-gate.ts).
import { describe, expect, it } from 'vitest';

import type { NativeField } from '../../src-main/engine/native-addon';
import { blobs, boardData, lcg, loadAddon, MLP_SPEC, RESNET_SPEC, thrown } from '../helpers/native';
import { gpuAvailable, gpuTimeout } from './gpu-gate';

const addon = loadAddon();
const gpu = gpuAvailable('GPU training tests');
const json = JSON.stringify;

const CNN_SPEC = { family: 'cnn', task: 'classification', input: [1, 12, 12], outputs: 4, channels: [8, 16], strides: [1, 2], kernel: 3, batchNorm: true, hidden: 32 };
const SMALL_RESNET = { ...RESNET_SPEC, layers: [1, 1, 1, 1], widths: [8, 16, 16, 24], stemWidth: 16, headChannels: 16, policyClasses: 1496 };

/** Class-dependent bright squares on noise: a CNN learns it quickly. */
function images(n: number, seed: number): Record<string, NativeField> {
  const rnd = lcg(seed);
  const x = new Uint8Array(n * 144);
  const y = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    y[i] = i % 4;
    for (let p = 0; p < 144; p++) x[i * 144 + p] = Math.floor(rnd() * 60);
    const ox = (y[i] % 2) * 6, oy = Math.floor(y[i] / 2) * 6;
    for (let r = 0; r < 5; r++) for (let c = 0; c < 5; c++) x[i * 144 + (oy + r) * 12 + ox + c] = 200;
  }
  return { x: { dtype: 'uint8', shape: [1, 12, 12], data: x, scale: 1 / 255 }, y: { dtype: 'int32', shape: [], data: y } };
}

interface Run {
  params: Float32Array;
  result: Record<string, unknown> & { steps: number; skippedSteps?: number; lossScale?: number; backend?: Record<string, unknown> };
  losses: number[];
}

async function train(spec: unknown, data: Record<string, NativeField>, options: Record<string, unknown>): Promise<Run> {
  const t = new addon.Trainer(json(spec), json({ seed: 5, threads: 0 }));
  t.setData('train', data);
  const losses: number[] = [];
  const result = (await t.train(json({ shuffle: false, eventIntervalMs: 0, ...options }), (e) => {
    const ev = e as { type: string; loss: number };
    if (ev.type === 'step') losses.push(ev.loss);
  })) as Run['result'];
  return { params: t.params(), result, losses };
}

/** ||a - b|| / ||b|| over the flat parameter block. */
function relDiff(a: Float32Array, b: Float32Array): number {
  let d = 0;
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    d += (a[i] - b[i]) ** 2;
    n += b[i] ** 2;
  }
  return Math.sqrt(d / n);
}

const sgd = { kind: 'sgd', lr: 0.05, momentum: 0.9, weightDecay: 1e-4 };
const DROPOUT_MLP = { ...MLP_SPEC, dropout: 0.3 };

/** Board data whose policy rows carry weights 0, 0.5 or 1 (the soft-target loss divides by their sum). */
function weightedBoardData(n: number, seed: number): Record<string, NativeField> {
  const rnd = lcg(seed + 100);
  const weights = new Float32Array(n).map(() => [0, 0.5, 1][Math.floor(rnd() * 3)]);
  return { ...boardData(n, seed), policy_mask: { dtype: 'float32', shape: [], data: weights } };
}
// The board networks' tolerances are wider, and their step smaller, for a reason seen on an H200
// (2026-11-27): at initialisation batch norm outputs are standard normal, and among the ~10^5 that
// enter a ReLU one may lie within fp32 rounding of 0 (1.5e-8 in float64). The CPU's fp32 and the
// GPU's float64 statistics then put it on different sides of the kink, one bias gradient moves by
// 1e-2, and at lr 0.05 with momentum 0.9 six steps grow that to 2.7e-2 of the parameters. The GPU
// matched PyTorch in float64 to the 4th decimal of every loss; the CPU differed from both by the
// same amount: no backend is wrong. At lr 0.005 the same kink leaves 1e-3 after six steps
// (measured against float64 PyTorch on the CPU), while a real kernel or wiring bug moves a
// gradient by far more. test/gpu/step-update.test.ts checks one step tensor by tensor.
const boardSgd = { ...sgd, lr: 0.005 };
const cases = [
  { name: 'MLP', spec: MLP_SPEC, data: () => blobs(256, 3), batch: 32, optimizer: sgd, params: 1e-4, losses: 1e-3 },
  { name: 'CNN', spec: CNN_SPEC, data: () => images(256, 4), batch: 32, optimizer: sgd, params: 1e-4, losses: 1e-3 },
  { name: 'board network', spec: SMALL_RESNET, data: () => boardData(128, 6), batch: 16, optimizer: boardSgd, params: 1e-2, losses: 5e-3 },
  { name: 'board network with policy row weights', spec: SMALL_RESNET, data: () => weightedBoardData(128, 6), batch: 16, optimizer: boardSgd, params: 1e-2, losses: 5e-3 },
];

describe.skipIf(!gpu)('whole training steps on cuda:0 match the CPU backend', () => {
  it.each(cases)('$name: fp32, 6 steps, parameters within $params and losses within $losses', async ({ spec, data, batch, optimizer, params, losses }) => {
    const options = { batchSize: batch, maxSteps: 6, optimizer };
    const cpu = await train(spec, data(), { ...options, device: 'cpu' });
    const onGpu = await train(spec, data(), { ...options, device: 'cuda:0' });
    const diff = relDiff(onGpu.params, cpu.params);
    console.log(`fp32 parity: parameter difference ${diff.toExponential(2)}; losses cpu ${cpu.losses.map((l) => l.toFixed(4)).join(' ')} gpu ${onGpu.losses.map((l) => l.toFixed(4)).join(' ')}`);
    expect(diff).toBeLessThan(params);
    onGpu.losses.forEach((l, i) => expect(Math.abs(l - cpu.losses[i])).toBeLessThan(losses * Math.max(1, Math.abs(cpu.losses[i]))));
  }, gpuTimeout(120_000));

  it.each(cases)('$name: bf16 and fp16 follow the fp32 losses within 2%', async ({ spec, data, batch, optimizer }) => {
    const options = { batchSize: batch, maxSteps: 6, optimizer, device: 'cuda:0' };
    const fp32 = await train(spec, data(), options);
    for (const precision of ['bf16', 'fp16']) {
      const mixed = await train(spec, data(), { ...options, precision });
      console.log(`${precision}: losses ${mixed.losses.map((l) => l.toFixed(4)).join(' ')} (fp32 ${fp32.losses.map((l) => l.toFixed(4)).join(' ')})`);
      mixed.losses.forEach((l, i) => expect(Math.abs(l - fp32.losses[i])).toBeLessThan(0.02 * Math.max(1, fp32.losses[i])));
      // A convolution's weight gradient is a few output tiles over K = batch x pixels (over 1,024 here): the own
      // kernel splits it (split-K, ADR 0020), and these losses came through that path wherever the own kernel ran.
      const shapes = (mixed.result.backend?.gemm as { shapes: { shape: string; ownSlices?: number }[] }).shapes;
      if (spec.family !== 'mlp') expect(shapes.filter((g) => (g.ownSlices ?? 1) > 1).map((g) => g.shape)).not.toHaveLength(0);
    }
  }, gpuTimeout(120_000));
});

describe.skipIf(!gpu)('epochs on cuda:0', () => {
  // The prefetch ring is kept from epoch to epoch and rebuilt for an evaluation's loader and back:
  // a ring bound to the wrong loader, or a slot left from the last epoch, shows as a parameter drift.
  it('3 epochs with a test split between them (partial last batches) match the CPU backend', async () => {
    const run = async (device: string) => {
      const t = new addon.Trainer(json(MLP_SPEC), json({ seed: 5, threads: 0 }));
      t.setData('train', blobs(100, 3));
      t.setData('test', blobs(50, 9));
      const result = (await t.train(json({ shuffle: true, batchSize: 32, epochs: 3, optimizer: sgd, device, eventIntervalMs: 0 }))) as { steps: number; epochs: { testLoss: number }[] };
      return { params: t.params(), result };
    };
    const cpu = await run('cpu');
    const onGpu = await run('cuda:0');
    expect(onGpu.result.steps).toBe(9);
    expect(onGpu.result.epochs.map((e) => e.testLoss)).toHaveLength(3);
    const diff = relDiff(onGpu.params, cpu.params);
    console.log(`3 epochs + evaluations: parameter difference ${diff.toExponential(2)}`);
    expect(diff).toBeLessThan(1e-4);
    onGpu.result.epochs.forEach((e, i) => expect(Math.abs(e.testLoss - cpu.result.epochs[i].testLoss)).toBeLessThan(1e-3));
  }, gpuTimeout(120_000));
});

describe.skipIf(!gpu)('fp16 dynamic loss scaling', () => {
  it('skips a step whose gradient is forced to inf, halves the scale and leaves the weights alone', async () => {
    const base = { batchSize: 32, optimizer: sgd, device: 'cuda:0', precision: 'fp16' };
    const clean = await train(MLP_SPEC, blobs(256, 3), { ...base, maxSteps: 3 });
    const poisoned = await train(MLP_SPEC, blobs(256, 3), { ...base, maxSteps: 4, debugNonfiniteGradAtStep: 3 });
    // Early steps at the initial 2^16 scale may overflow on their own; the forced inf adds exactly one skip.
    expect(poisoned.result.skippedSteps).toBe((clean.result.skippedSteps ?? 0) + 1);
    expect(poisoned.result.lossScale).toBe((clean.result.lossScale ?? 0) / 2);
    // Step 4 was skipped, so the weights are those after three steps.
    expect(relDiff(poisoned.params, clean.params)).toBe(0);
  }, gpuTimeout(60_000));
});

describe.skipIf(!gpu)('GPU memory', () => {
  it('an impossible batch size is E_OOM with the numbers, and the next run at a sane size works', async () => {
    // 65,536 samples x 1M hidden units (the largest layer a spec may have): 256 GiB of activations, more than any GPU has.
    const wide = { ...MLP_SPEC, hidden: [1 << 20] };
    const t = new addon.Trainer(json(wide), json({ seed: 1 }));
    t.setData('train', blobs(65_536, 2));
    const oom = await t.train(json({ batchSize: 65_536, maxSteps: 1, device: 'cuda:0' })).catch((e: unknown) => e);
    expect(oom).toMatchObject({ code: 'E_OOM', message: expect.stringMatching(/requested \d+ bytes, \d+ free/) });
    const after = await train(SMALL_RESNET, boardData(64, 2), { batchSize: 16, maxSteps: 2, device: 'cuda:0' });
    expect(after.result.steps).toBe(2);
  }, gpuTimeout(120_000));

  it('reports predicted and measured device memory by kind', async () => {
    const run = await train(SMALL_RESNET, boardData(64, 2), { batchSize: 16, maxSteps: 2, device: 'cuda:0' });
    const memory = run.result.memory as { predicted: Record<string, number>; measured: Record<string, number>; device: string };
    expect(memory.device).toBe('cuda:0');
    for (const kind of ['weights', 'gradients', 'optimizerState', 'activations', 'activationGrads']) {
      expect(memory.measured[kind], kind).toBe(memory.predicted[kind]);
    }
  }, gpuTimeout(60_000));
});

describe.skipIf(!gpu)('CUDA graphs and phase timing', () => {
  const graphCases = [
    { name: 'CNN fp32, batch 32', spec: CNN_SPEC, data: () => images(512, 4), batch: 32, precision: 'fp32' },
    { name: 'CNN bf16, batch 32', spec: CNN_SPEC, data: () => images(512, 4), batch: 32, precision: 'bf16' },
    { name: 'CNN fp16 (loss scaling inside the graph), batch 32', spec: CNN_SPEC, data: () => images(512, 4), batch: 32, precision: 'fp16' },
    { name: 'board network (two heads, soft targets), batch 16', spec: SMALL_RESNET, data: () => weightedBoardData(256, 6), batch: 16, precision: 'fp32' },
    { name: 'MLP with dropout (new masks every replay), batch 64', spec: DROPOUT_MLP, data: () => blobs(1024, 3), batch: 64, precision: 'fp32' },
  ];
  it.each(graphCases)('$name: a captured and replayed step gives the eager result', async ({ spec, data, batch, precision }) => {
    const options = { batchSize: batch, maxSteps: 8, optimizer: sgd, device: 'cuda:0', precision };
    const eager = await train(spec, data(), options);
    const graph = await train(spec, data(), { ...options, cudaGraph: true });
    expect(graph.result.backend?.cudaGraph).toBe('captured and replayed');
    // Counted in the captured graph: a forward, a backward and an update are each several kernels.
    const launches = graph.result.backend?.launchesPerStep as { kernels: number; copies: number; memsets: number; other: number; total: number };
    console.log(`${spec === CNN_SPEC ? 'CNN' : 'model'} ${precision}: ${launches.total} launches per step (${launches.kernels} kernels, ${launches.copies} copies, ${launches.memsets} memsets)`);
    expect(launches.kernels).toBeGreaterThan(10);
    expect(launches.total).toBe(launches.kernels + launches.copies + launches.memsets + launches.other);
    // Add, Flatten and dropout that drops nothing copy no values (ADR 0020 step 6): none of these models has an
    // input feeding both a block and its Add, the one place a gradient is still copied.
    expect(launches.copies).toBe(0);
    expect(relDiff(graph.params, eager.params)).toBeLessThan(1e-6);
    graph.losses.forEach((l, i) => expect(Math.abs(l - eager.losses[i])).toBeLessThan(1e-6 * Math.max(1, Math.abs(eager.losses[i]))));
  }, gpuTimeout(120_000));

  it('an identity shortcut (a block input that also feeds its Add) gets its gradient copied and added, all others pass theirs on', async () => {
    // Stage 1 has two blocks: the second keeps 32 channels at stride 1, so its input goes to conv1 and to the Add.
    const spec = { ...SMALL_RESNET, layers: [2, 1, 1, 1] };
    const options = { batchSize: 8, maxSteps: 4, optimizer: boardSgd };
    const cpu = await train(spec, boardData(64, 3), { ...options, device: 'cpu' });
    const graph = await train(spec, boardData(64, 3), { ...options, device: 'cuda:0', cudaGraph: true });
    expect(relDiff(graph.params, cpu.params)).toBeLessThan(1e-2);
    graph.losses.forEach((l, i) => expect(Math.abs(l - cpu.losses[i])).toBeLessThan(5e-3 * Math.max(1, Math.abs(cpu.losses[i]))));
    expect((graph.result.backend?.launchesPerStep as { copies: number }).copies).toBe(1);
  }, gpuTimeout(120_000));

  it('captures the step again when an evaluation between epochs moved a GEMM buffer the graph writes to', async () => {
    // 4,096 inputs into 64 units in bf16: the first linear layer's forward is split over K. Training's batch of 80
    // is two row tiles, the evaluation's 64 one, so the evaluation splits K into more slices and grows the split-K
    // workspace without growing any activation buffer. The graph captured before it wrote the old workspace.
    const spec = { family: 'mlp', task: 'classification', input: [4096], outputs: 3, hidden: [64], dropout: 0 };
    const data = (n: number, seed: number) => {
      const rnd = lcg(seed);
      const x = new Float32Array(n * 4096).map(() => rnd() - 0.5);
      return { x: { dtype: 'float32' as const, shape: [4096], data: x }, y: { dtype: 'int32' as const, shape: [], data: new Int32Array(n).map((_, i) => i % 3) } };
    };
    const run = async (cudaGraph: boolean) => {
      const t = new addon.Trainer(json(spec), json({ seed: 5, threads: 0 }));
      t.setData('train', data(240, 1));
      t.setData('test', data(64, 2));
      const options = { shuffle: false, batchSize: 80, evalBatchSize: 64, epochs: 2, optimizer: sgd, device: 'cuda:0', precision: 'bf16', cudaGraph, eventIntervalMs: 0 };
      const result = (await t.train(json(options))) as Run['result'];
      return { result, params: t.params() };
    };
    const eager = await run(false);
    const graph = await run(true);
    expect(graph.result.backend?.cudaGraph).toBe('captured and replayed');
    // Captured at epoch 1's third step, and again in epoch 2 after the evaluation moved the workspace.
    expect(graph.result.backend?.graphCaptures).toBe(2);
    expect(relDiff(graph.params, eager.params)).toBeLessThan(1e-6);
  }, gpuTimeout(120_000));

  it('measurement mode times every phase', async () => {
    const run = await train(CNN_SPEC, images(256, 4), { batchSize: 32, maxSteps: 6, device: 'cuda:0', phaseTiming: 'measure' });
    const phases = run.result.phasesMs as Record<string, number>;
    for (const p of ['forward', 'loss', 'backward', 'optimizer']) expect(phases[p], p).toBeGreaterThan(0);
    expect(String(run.result.backend?.timing)).toMatch(/measurement mode/);
    const shares = run.result.backend?.opShares as { op: string; share: number }[];
    expect(shares.map((s) => s.op)).toEqual(expect.arrayContaining(['conv2d forward', 'conv2d backward', 'linear backward']));
    expect(shares.reduce((a, s) => a + s.share, 0)).toBeCloseTo(1, 6);
  }, gpuTimeout(60_000));
});

describe.skipIf(!gpu)('dropout on cuda:0', () => {
  it.each([1, 2])('masks do not depend on when the host reads the sums (accumulation %i)', async (accumulation) => {
    // Reading every step or once at the end must train the same weights: the masks depend on the step,
    // the layer and the micro-batch only.
    const options = { batchSize: 32, maxSteps: 6, accumulation, optimizer: sgd, device: 'cuda:0' };
    const often = await train(DROPOUT_MLP, blobs(512, 3), { ...options, eventIntervalMs: 0 });
    const rarely = await train(DROPOUT_MLP, blobs(512, 3), { ...options, eventIntervalMs: 3_600_000 });
    // Different masks move the weights by ~1e-2; the same masks leave only atomics' last bits, if any.
    expect(relDiff(rarely.params, often.params)).toBeLessThan(1e-6);
  }, gpuTimeout(60_000));
});

describe('CUDA training on a machine without a GPU', () => {
  it.skipIf(gpu)('device cuda:0 is refused with the reason', () => {
    const t = new addon.Trainer(json(MLP_SPEC), json({ seed: 1 }));
    t.setData('train', blobs(64, 1));
    return expect(t.train(json({ batchSize: 8, maxSteps: 1, device: 'cuda:0' }))).rejects.toMatchObject({
      code: 'E_BAD_INPUT',
      message: expect.stringMatching(/cuda:0/),
    });
  });

  it('mixed precision and CUDA graphs on the CPU are refused, naming the option', async () => {
    const t = new addon.Trainer(json(MLP_SPEC), json({ seed: 1 }));
    t.setData('train', blobs(64, 1));
    await expect(t.train(json({ batchSize: 8, maxSteps: 1, precision: 'bf16' }))).rejects.toMatchObject({
      code: 'E_BAD_INPUT',
      message: expect.stringMatching(/precision 'bf16' needs a CUDA device/),
    });
    await expect(t.train(json({ batchSize: 8, maxSteps: 1, cudaGraph: true }))).rejects.toMatchObject({
      message: expect.stringMatching(/cudaGraph needs a CUDA device/),
    });
    expect(thrown(() => t.train(json({ precision: 'fp8' }))).message).toMatch(/options.precision must be one of fp32, bf16, fp16, got "fp8"/);
  });
});
