// Models, training steps, reproducibility, accumulation and bad input, calling the addon directly.
import { describe, expect, it } from 'vitest';

import { blobs, boardData, loadAddon, MLP_SPEC, RESNET_SPEC, thrown } from '../helpers/native';

const addon = loadAddon();
const json = JSON.stringify;

describe('training FLOPs of an MLP', () => {
  it("leaves out the first layer's input gradient (the data needs none): 3 x forward - 2 x 12 x 16", () => {
    const info = addon.modelInfo(json(MLP_SPEC));
    // Forward: three linears (12->16, 16->8, 8->3) with biases, two ReLUs.
    expect(info.flopsPerSample).toBe(2 * 12 * 16 + 16 + 16 + 2 * 16 * 8 + 8 + 8 + 2 * 8 * 3 + 3);
    expect(info.trainingFlopsPerSample).toBe(3 * info.flopsPerSample - 2 * 12 * 16);
  });
});

describe('bottleneck_resnet with the default sizes', () => {
  const info = addon.modelInfo(json(RESNET_SPEC));

  it('goes 9 -> 9 -> 5 -> 3 -> 2 through its stages', () => {
    const adds = info.layers.filter((l) => l.kind === 'add').map((l) => l.shape.join('x'));
    expect(adds).toEqual(['96x9x9', '96x9x9', '192x5x5', '192x5x5', '384x3x3', '384x3x3', '576x2x2']);
    expect(info.layers.find((l) => l.name === 'stem.conv')?.shape).toEqual([24, 9, 9]);
  });

  it('has about 2.6M parameters, counted from its parameter table', () => {
    const counted = info.parameters
      .filter((p) => p.trainable)
      .reduce((n, p) => n + p.shape.reduce((a, b) => a * b, 1), 0);
    expect(info.params).toBe(counted);
    expect(info.params).toBeGreaterThan(2.5e6);
    expect(info.params).toBeLessThan(2.7e6);
    console.log(`bottleneck_resnet: ${info.params} parameters, ${(info.flopsPerSample / 1e6).toFixed(1)} MFLOP/sample forward`);
  });

  it('counts the training FLOPs a step must do: the taps inside the board, less the stem input gradient', () => {
    // The stem reads the data (104 planes, 3x3 pad 1, 24 channels out on 9x9): no gradient flows into the data. Inside
    // the board a 3x3 kernel reaches 25 of 27 positions along each side: 625 taps of the 729 counted forward.
    const stemCounted = 2 * 24 * 104 * 81 * 9;
    const stemNeeded = 2 * 24 * 104 * 625;
    // Every padded 3x3 convolution loses its padding taps, the heads' on 2x2 (16 of 36 taps) most: less than 3x the
    // forward by more than the stem's own share, yet more than twice it.
    expect(info.trainingFlopsPerSample).toBeLessThan(3 * info.flopsPerSample - 3 * (stemCounted - stemNeeded) - stemNeeded);
    expect(info.trainingFlopsPerSample).toBeGreaterThan(2 * info.flopsPerSample);
    expect(Number.isInteger(info.trainingFlopsPerSample)).toBe(true);
  });

  it('has a 1496-way policy head (soft-target CE) and a value head (BCE on logits)', () => {
    expect(info.heads).toEqual([
      { name: 'policy', loss: 'softmax_ce_soft', target: 'policy', outputs: 1496 },
      { name: 'value', loss: 'bce_logits', target: 'value', outputs: 1 },
    ]);
  });

  it('lowers the loss on a fixed batch with one SGD step', async () => {
    const t = new addon.Trainer(json(RESNET_SPEC), json({ seed: 3 }));
    t.setData('train', boardData(16, 11));
    const before = await t.evaluate('train');
    await t.train(json({ batchSize: 16, epochs: 1, shuffle: false, optimizer: { kind: 'sgd', lr: 0.01, momentum: 0.9, weightDecay: 1e-4 } }));
    const after = await t.evaluate('train');
    console.log(`resnet one step: loss ${before.loss.toFixed(4)} -> ${after.loss.toFixed(4)}`);
    expect(after.loss).toBeLessThan(before.loss);
  });

  it('overfits 64 samples to near-zero loss', async () => {
    const t = new addon.Trainer(json(RESNET_SPEC), json({ seed: 1 }));
    t.setData('train', boardData(64, 5));
    const losses: number[] = [];
    await t.train(
      json({ batchSize: 64, epochs: 40, shuffle: false, eventIntervalMs: 0, optimizer: { kind: 'adamw', lr: 1e-3, weightDecay: 0 } }),
      (e) => {
        const ev = e as { type: string; loss: number };
        if (ev.type === 'step') losses.push(ev.loss);
      },
    );
    console.log(`resnet overfit: loss ${losses[0].toFixed(3)} -> ${losses.at(-1)?.toFixed(5)} in ${losses.length} steps`);
    expect(losses[0]).toBeGreaterThan(5);
    expect(losses.at(-1)).toBeLessThan(0.02);
  }, 120_000);
});

describe('model specs are validated again in C++', () => {
  const cases: [string, unknown, string][] = [
    ['a negative width', { ...MLP_SPEC, hidden: [16, -3] }, 'spec.hidden[1] must be an integer from 1'],
    ['zero outputs', { ...MLP_SPEC, outputs: 0 }, 'spec.outputs must be an integer from 1'],
    ['one class', { ...MLP_SPEC, outputs: 1 }, 'spec.outputs must be at least 2 classes'],
    ['an unknown family', { family: 'transformer' }, 'spec.family must be'],
    ['a field of another family', { ...MLP_SPEC, channels: [3] }, 'spec.channels is not a field'],
    ['strides that do not match channels', { family: 'cnn', task: 'classification', input: [1, 8, 8], outputs: 2, channels: [4, 8], strides: [1], kernel: 3, batchNorm: true }, 'spec.strides must have one entry per entry of spec.channels'],
    ['an even kernel', { family: 'cnn', task: 'classification', input: [1, 8, 8], outputs: 2, channels: [4], strides: [1], kernel: 4, batchNorm: true }, 'spec.kernel must be odd'],
    ['an image of zero height', { family: 'cnn', task: 'classification', input: [1, 0, 8], outputs: 2, channels: [4], strides: [1], kernel: 3, batchNorm: true }, 'spec.input[1] must be an integer from 1'],
    ['stages of different lengths', { ...RESNET_SPEC, widths: [24, 48] }, 'one entry per stage'],
    ['a huge size', { ...MLP_SPEC, hidden: [1e9] }, 'spec.hidden[0] must be an integer from 1 to 1048576, got 1000000000'],
    ['a fractional size', { ...MLP_SPEC, outputs: 2.5 }, 'spec.outputs must be an integer'],
  ];
  it.each(cases)('refuses %s with E_BAD_INPUT naming the field', (_what, spec, message) => {
    const err = thrown(() => addon.modelInfo(json(spec)));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toContain(message);
  });

  it('refuses text that is not JSON, with the byte offset', () => {
    const err = thrown(() => addon.modelInfo('{"family": "mlp",'));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toMatch(/invalid JSON at byte \d+/);
  });
});

describe('training', () => {
  const mlp = (seed: number, spec: object = MLP_SPEC) => new addon.Trainer(json(spec), json({ seed }));

  it('gives the same update with accumulation as with one large batch', async () => {
    const a = mlp(9);
    const b = mlp(9);
    a.setData('train', blobs(128, 1));
    b.setData('train', blobs(128, 1));
    const optimizer = { kind: 'sgd', lr: 0.05, momentum: 0.9, weightDecay: 1e-4 };
    await a.train(json({ batchSize: 32, accumulation: 1, maxSteps: 4, optimizer }));
    await b.train(json({ batchSize: 8, accumulation: 4, maxSteps: 4, optimizer }));
    const pa = a.params();
    const pb = b.params();
    const moved = pa.some((v, i) => v !== mlp(9).params()[i]);
    expect(moved).toBe(true);
    const maxDiff = pa.reduce((m, v, i) => Math.max(m, Math.abs(v - pb[i])), 0);
    console.log(`accumulation 4x8 vs batch 32: max parameter difference ${maxDiff.toExponential(2)}`);
    expect(maxDiff).toBeLessThan(1e-5);
  });

  it('is reproducible bit for bit with the same seed and threads (conv, batch norm, dropout)', async () => {
    const spec = { family: 'cnn', task: 'classification', input: [3, 8, 8], outputs: 3, channels: [4, 8], strides: [1, 2], kernel: 3, batchNorm: true, hidden: 16, dropout: 0.2 };
    const rnd = (n: number) => new Float32Array(n).map((_, i) => Math.sin(i * 12.9898) * 0.5);
    const data = () => ({
      x: { dtype: 'float32' as const, shape: [3, 8, 8], data: rnd(96 * 192) },
      y: { dtype: 'int32' as const, shape: [], data: new Int32Array(96).map((_, i) => i % 3) },
    });
    const run = async (seed: number) => {
      const t = new addon.Trainer(json(spec), json({ seed, threads: 2 }));
      t.setData('train', data());
      const losses: number[] = [];
      await t.train(json({ batchSize: 16, epochs: 3, eventIntervalMs: 0, optimizer: { kind: 'adamw', lr: 1e-2 } }), (e) => {
        const ev = e as { type: string; loss: number };
        if (ev.type === 'step') losses.push(ev.loss);
      });
      return { params: t.params(), losses };
    };
    const [a, b, c] = await Promise.all([run(4), run(4), run(5)]);
    expect(Buffer.from(a.params.buffer).equals(Buffer.from(b.params.buffer))).toBe(true);
    expect(a.losses).toEqual(b.losses);
    expect(Buffer.from(a.params.buffer).equals(Buffer.from(c.params.buffer))).toBe(false);
  });

  it('stops within one step when cancelled, with E_CANCELLED', async () => {
    const t = new addon.Trainer(json(RESNET_SPEC), json({ seed: 1 }));
    t.setData('train', boardData(256, 2));
    let stepsAtCancel = -1;
    let lastStep = 0;
    const done = t.train(json({ batchSize: 16, epochs: 100, eventIntervalMs: 0 }), (e) => {
      const ev = e as { type: string; globalStep: number };
      if (ev.type !== 'step') return;
      lastStep = ev.globalStep;
      if (stepsAtCancel < 0 && ev.globalStep >= 2) {
        stepsAtCancel = ev.globalStep;
        expect(t.cancel()).toBe(true);
      }
    });
    await expect(done).rejects.toMatchObject({ code: 'E_CANCELLED', message: expect.stringMatching(/^training was cancelled at step \d+ of \d+ \(epoch \d+, its step \d+\)/) });
    expect(lastStep - stepsAtCancel).toBeLessThanOrEqual(1);
    // The trainer is usable again afterwards.
    await expect(t.evaluate('train')).resolves.toMatchObject({ samples: 256 });
  });

  it('follows warm-up then cosine decay of the learning rate', async () => {
    const t = mlp(2);
    t.setData('train', blobs(320, 2));
    const lrs: number[] = [];
    await t.train(
      json({ batchSize: 16, maxSteps: 20, eventIntervalMs: 0, optimizer: { kind: 'sgd', lr: 0.1 }, schedule: { kind: 'warmup_cosine', warmupSteps: 4, minLr: 0.01 } }),
      (e) => {
        const ev = e as { type: string; lr: number };
        if (ev.type === 'step') lrs.push(ev.lr);
      },
    );
    [0.025, 0.05, 0.075, 0.1].forEach((lr, i) => expect(lrs[i]).toBeCloseTo(lr, 12));
    expect(lrs[4]).toBeCloseTo(0.1, 10);
    for (let i = 5; i < lrs.length; i++) expect(lrs[i]).toBeLessThan(lrs[i - 1]);
    expect(lrs.at(-1)).toBeGreaterThanOrEqual(0.01);
    expect(lrs.at(-1)).toBeLessThan(0.012);
  });

  it('clips gradients to the global norm', async () => {
    const t = mlp(3);
    t.setData('train', blobs(64, 4));
    const before = t.params();
    let norm = 0;
    await t.train(json({ batchSize: 64, maxSteps: 1, clipNorm: 0.01, optimizer: { kind: 'sgd', lr: 1, momentum: 0, weightDecay: 0 } }), (e) => {
      const ev = e as { type: string; gradNorm: number };
      if (ev.type === 'step') norm = ev.gradNorm;
    });
    const after = t.params();
    const step = Math.sqrt(after.reduce((s, v, i) => s + (v - before[i]) ** 2, 0));
    expect(norm).toBeGreaterThan(0.01); // the unclipped norm is reported
    expect(step).toBeLessThanOrEqual(0.01 * 1.0001); // lr 1 x clipped gradient
    expect(step).toBeGreaterThan(0.0099);
  });

  it('predicts its memory by kind exactly as it allocates it', async () => {
    const spec = { family: 'cnn', task: 'classification', input: [1, 12, 12], outputs: 3, channels: [8, 16], strides: [1, 2], kernel: 3, batchNorm: true, hidden: 16, dropout: 0.1 };
    const t = new addon.Trainer(json(spec), json({ seed: 1 }));
    const n = 128;
    t.setData('train', {
      x: { dtype: 'uint8', shape: [1, 12, 12], data: new Uint8Array(n * 144).map((_, i) => i % 251) },
      y: { dtype: 'uint8', shape: [], data: new Uint8Array(n).map((_, i) => i % 3) },
    });
    const r = (await t.train(json({ batchSize: 32, maxSteps: 2, prefetch: 3, optimizer: { kind: 'adamw' } }))) as {
      memory: { predicted: Record<string, number>; measured: Record<string, number> };
    };
    expect(r.memory.measured).toEqual(r.memory.predicted);
    const params = t.info().params;
    expect(r.memory.predicted.gradients).toBe(params * 4);
    expect(r.memory.predicted.optimizerState).toBe(params * 8); // AdamW: two moments
    expect(r.memory.predicted.batchData).toBe((144 + 1) * 32 * 3 + 32 * 144 * 4); // 3 loader slots + the widened input
  });

  it('refuses a second job while one runs', async () => {
    const t = mlp(1);
    t.setData('train', blobs(4096, 3));
    const first = t.train(json({ batchSize: 8, epochs: 5 }));
    expect(() => t.train(json({ batchSize: 8 }))).toThrowError(/already running/);
    t.cancel();
    await expect(first).rejects.toMatchObject({ code: 'E_CANCELLED' });
  });
});

describe('bad training input gets a clear error, never a crash', () => {
  const t = () => new addon.Trainer(json(MLP_SPEC), '{}');
  const field = (data: ArrayBufferView, dtype: 'float32' | 'int32' | 'uint8', shape: number[]) => ({ dtype, shape, data });

  it('NaN in the inputs, naming the record', () => {
    const d = blobs(8, 1);
    (d.x.data as Float32Array)[3 * 12 + 5] = NaN;
    const err = thrown(() => t().setData('train', d));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toContain("field 'x' has NaN at record 3, value 5");
  });

  it('fields of different lengths', () => {
    const d = blobs(8, 1);
    d.y = field(new Int32Array(7), 'int32', []);
    expect(thrown(() => t().setData('train', d)).message).toMatch(/has 7 records but the other fields have 8|has 8 records but the other fields have 7/);
  });

  it('inputs of the wrong shape for the model', () => {
    const d = blobs(8, 1, 10);
    const err = thrown(() => t().setData('train', d));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toContain("field 'x' has 10 values per record but the model takes 12 values: choose a model whose input matches the data, or one sized to it");
  });

  it('labels out of range', () => {
    const d = blobs(8, 1);
    (d.y.data as Int32Array)[6] = 7;
    const err = thrown(() => t().setData('train', d));
    expect(err.message).toContain('label 7 at record 6 is outside [0, 3)');
  });

  it('a byte count that is not whole records', () => {
    const err = thrown(() => t().setData('train', { x: field(new Uint8Array(3), 'float32', [12]), y: field(new Int32Array(1), 'int32', []) }));
    expect(err.code).toBe('E_BAD_INPUT');
  });

  it('an unknown dtype', () => {
    const d = blobs(8, 1) as Record<string, { dtype: string }>;
    d.x.dtype = 'complex64';
    expect(thrown(() => t().setData('train', d as never)).message).toContain("dtype 'complex64' is not supported");
  });

  it('a batch larger than the data', async () => {
    const tr = t();
    tr.setData('train', blobs(8, 1));
    await expect(tr.train(json({ batchSize: 64 }))).rejects.toMatchObject({
      code: 'E_BAD_INPUT',
      message: expect.stringContaining('needs 64 samples per step but only 8'),
    });
  });

  it('bad options, naming them', async () => {
    const tr = t();
    tr.setData('train', blobs(8, 1));
    expect(() => tr.train(json({ batchSize: 0 }))).toThrowError(/options.batchSize must be an integer from 1/);
    expect(() => tr.train(json({ optimizer: { kind: 'lion' } }))).toThrowError(/options.optimizer.kind must be/);
    expect(() => tr.train(json({ sampleRatio: 0 }))).toThrowError(/options.sampleRatio/);
    expect(() => tr.train(json({ phaseTiming: 'sync' }))).toThrowError(/options.phaseTiming must be one of default, measure, got "sync"/);
    expect(() => tr.train(json({ gpuPrefetch: 0 }))).toThrowError(/options.gpuPrefetch must be an integer from 1 to 16, got 0/);
    expect(() => tr.train(json({ cudaGraph: 'yes' }))).toThrowError(/options.cudaGraph must be true or false, got "yes"/);
    expect(() => tr.train(json({ device: 3 }))).toThrowError(/options.device must be 'cpu' or 'cuda:N', got 3/);
  });

  it('a loss that becomes NaN, with the step and the learning rate, before it reaches the weights', async () => {
    const tr = t();
    const d = blobs(64, 1);
    (d.x.data as Float32Array).forEach((v, i, a) => (a[i] = v * 1e6));
    tr.setData('train', d);
    await expect(tr.train(json({ batchSize: 8, epochs: 50, optimizer: { kind: 'sgd', lr: 10 } }))).rejects.toMatchObject({
      code: 'E_DATA',
      message: expect.stringMatching(/the loss became (NaN|infinite) at epoch \d+, step \d+ \(learning rate 10/),
    });
    expect(tr.params().every(Number.isFinite)).toBe(true);
  });
});
