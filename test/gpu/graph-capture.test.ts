// CUDA graphs (a captured and replayed step against eager), phase timing and dropout masks on the
// CUDA backend. Apart from training.test.ts so that on the emulated device, where each test process is
// its own CPU-bound device, the two halves run side by side (scripts/test-gpu-emu.sh).
import { describe, expect, it } from 'vitest';

import { blobs, boardData, lcg } from '../helpers/native';
import { gpuAvailable, gpuTimeout } from './gpu-gate';
import { addon, boardSgd, CNN_SPEC, DROPOUT_MLP, images, json, relDiff, type Run, sgd, SMALL_RESNET, train, weightedBoardData } from './training-cases';

const gpu = gpuAvailable('GPU graph tests');

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
