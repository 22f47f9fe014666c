// The CPU backend under a memory limit: an allocation past the cap is a typed E_OOM with the bytes
// requested and free, thrown before anything is allocated, and the run's buffers come back afterwards.
import { describe, expect, it } from 'vitest';

import { loadAddon } from '../helpers/native';

const addon = loadAddon();
const json = JSON.stringify;
const SPEC = { family: 'cnn', task: 'classification', input: [1, 12, 12], outputs: 3, channels: [8, 16], strides: [1, 2], kernel: 3, batchNorm: true, hidden: 16, dropout: 0.1 };

function trainer() {
  const t = new addon.Trainer(json(SPEC), json({ seed: 1, threads: 1 }));
  const n = 512;
  t.setData('train', {
    x: { dtype: 'uint8', shape: [1, 12, 12], data: new Uint8Array(n * 144).map((_, i) => i % 251) },
    y: { dtype: 'uint8', shape: [], data: new Uint8Array(n).map((_, i) => i % 3) },
  });
  return t;
}

type Summary = { memory: { predicted: { total: number }; measured: { total: number }; peakBytes: number; limitBytes?: number } };

describe('memoryLimitBytes on the CPU backend', () => {
  it('predicts without training what a run then uses to the byte, and reports its peak', async () => {
    const t = trainer();
    const predicted = t.predictMemory(json({ batchSize: 64 }));
    const r = (await t.train(json({ batchSize: 64, maxSteps: 2 }))) as Summary;
    expect(predicted.total).toBe(r.memory.predicted.total);
    expect(r.memory.measured.total).toBe(predicted.total);
    expect(r.memory.peakBytes).toBe(predicted.total);
    expect(addon.engineMemory().chargedBytes).toBe(0);
  });

  it('trains when the prediction fits the limit exactly, and fails with E_OOM one byte below it', async () => {
    const t = trainer();
    const need = t.predictMemory(json({ batchSize: 64 })).total;
    const ok = (await t.train(json({ batchSize: 64, maxSteps: 2, memoryLimitBytes: need }))) as Summary;
    expect(ok.memory.peakBytes).toBe(need);
    expect(ok.memory.limitBytes).toBe(need);
    const err = await t.train(json({ batchSize: 64, maxSteps: 2, memoryLimitBytes: need - 1 })).then(
      () => null,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.code).toBe('E_OOM');
    expect(err?.message).toMatch(/out of memory under the CPU memory limit: activations and workspace requested \d+ bytes, \d+ free of \d+ \(\d+ allocated by Trainbench\)/);
    expect(err?.message).toContain(`free of ${need - 1}`);
  });

  it('gives every byte back after an OOM, and the same trainer trains again at a batch that fits', async () => {
    const t = trainer();
    const before = addon.engineMemory().chargedBytes;
    const small = t.predictMemory(json({ batchSize: 16 })).total;
    await expect(t.train(json({ batchSize: 256, maxSteps: 1, memoryLimitBytes: small }))).rejects.toMatchObject({ code: 'E_OOM' });
    expect(addon.engineMemory().chargedBytes).toBe(before);
    const r = (await t.train(json({ batchSize: 16, maxSteps: 2, memoryLimitBytes: small }))) as Summary;
    expect(r.memory.peakBytes).toBe(small);
    expect(addon.engineMemory().chargedBytes).toBe(before);
  });

  it('names the loader when its buffers are what does not fit', async () => {
    const t = trainer();
    const weights = t.predictMemory(json({ batchSize: 1 }));
    const fixed = weights.weights + weights.gradients + weights.optimizerState;
    await expect(t.train(json({ batchSize: 256, maxSteps: 1, memoryLimitBytes: fixed + 10 }))).rejects.toThrow(/loader batch buffers requested/);
  });

  it('refuses a limit on a CUDA device and a bad value, naming the option', async () => {
    const t = trainer();
    expect(() => t.train(json({ batchSize: 8, memoryLimitBytes: -5 }))).toThrow(/options.memoryLimitBytes must be an integer from 0 to \d+, got -5/);
    expect(() => t.train(json({ batchSize: 8, memoryLimitBytes: 1.5 }))).toThrow(/memoryLimitBytes must be an integer/);
    await expect(t.train(json({ batchSize: 8, device: 'cuda:0', memoryLimitBytes: 1 << 20 }))).rejects.toThrow(
      /memoryLimitBytes caps the CPU backend's memory; on cuda:0 the device's own memory is the limit/,
    );
  });
});
