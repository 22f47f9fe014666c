// What the GPU training suites share: the small models and data they train, one
// training run through the addon with its per-step losses, and the distance
// between two parameter blocks.
import type { NativeField } from '../../src-main/engine/native-addon';
import { boardData, lcg, loadAddon, MLP_SPEC, RESNET_SPEC } from '../helpers/native';

export const addon = loadAddon();
export const json = JSON.stringify;

export const CNN_SPEC = { family: 'cnn', task: 'classification', input: [1, 12, 12], outputs: 4, channels: [8, 16], strides: [1, 2], kernel: 3, batchNorm: true, hidden: 32 };
export const SMALL_RESNET = { ...RESNET_SPEC, layers: [1, 1, 1, 1], widths: [8, 16, 16, 24], stemWidth: 16, headChannels: 16, policyClasses: 1496 };

/** Class-dependent bright squares on noise: a CNN learns it quickly. */
export function images(n: number, seed: number): Record<string, NativeField> {
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

export interface Run {
  params: Float32Array;
  result: Record<string, unknown> & { steps: number; skippedSteps?: number; lossScale?: number; backend?: Record<string, unknown> };
  losses: number[];
}

export async function train(spec: unknown, data: Record<string, NativeField>, options: Record<string, unknown>): Promise<Run> {
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
export function relDiff(a: Float32Array, b: Float32Array): number {
  let d = 0;
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    d += (a[i] - b[i]) ** 2;
    n += b[i] ** 2;
  }
  return Math.sqrt(d / n);
}

export const sgd = { kind: 'sgd', lr: 0.05, momentum: 0.9, weightDecay: 1e-4 };
export const DROPOUT_MLP = { ...MLP_SPEC, dropout: 0.3 };

/** Board data whose policy rows carry weights 0, 0.5 or 1 (the soft-target loss divides by their sum). */
export function weightedBoardData(n: number, seed: number): Record<string, NativeField> {
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
export const boardSgd = { ...sgd, lr: 0.005 };
