import { createRequire } from 'node:module';

import type { NativeAddon, NativeError, NativeField } from '../../src-main/engine/native-addon';
import { ADDON_PATH, requireBuilt } from './repo';

/** The built addon, loaded into the test process (native tests call it directly). */
export function loadAddon(): NativeAddon {
  requireBuilt();
  return createRequire(__filename)(ADDON_PATH) as NativeAddon;
}

export function thrown(fn: () => unknown): NativeError {
  try {
    fn();
  } catch (err) {
    return err as NativeError;
  }
  throw new Error('expected a throw');
}

/** A deterministic LCG so synthetic data is the same on every run. */
export function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

export const RESNET_SPEC = {
  family: 'bottleneck_resnet',
  input: [104, 9, 9],
  stemWidth: 24,
  layers: [2, 2, 2, 1],
  strides: [1, 2, 2, 2],
  widths: [24, 48, 96, 144],
  expansion: 4,
  headChannels: 128,
  policyClasses: 1496,
};

/** Random board positions with one-hot policy targets and 0/1 values: a fit can reach zero loss. */
export function boardData(n: number, seed: number, classes = 1496): Record<string, NativeField> {
  const rnd = lcg(seed);
  const x = new Uint8Array(n * 104 * 81).map(() => (rnd() < 0.3 ? 1 : 0));
  const policy = new Float32Array(n * classes);
  for (let i = 0; i < n; i++) policy[i * classes + Math.floor(rnd() * classes)] = 1;
  const value = new Float32Array(n).map(() => (rnd() < 0.5 ? 1 : 0));
  return {
    x: { dtype: 'uint8', shape: [104, 9, 9], data: x },
    policy: { dtype: 'float32', shape: [classes], data: policy },
    value: { dtype: 'float32', shape: [], data: value },
  };
}

export const MLP_SPEC = { family: 'mlp', task: 'classification', input: [12], outputs: 3, hidden: [16, 8], dropout: 0 };

/** A small separable classification problem for quick MLP tests. */
export function blobs(n: number, seed: number, features = 12, classes = 3): Record<string, NativeField> {
  const rnd = lcg(seed);
  const x = new Float32Array(n * features);
  const y = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    y[i] = i % classes;
    for (let f = 0; f < features; f++) x[i * features + f] = (f % classes === y[i] ? 1.5 : 0) + (rnd() - 0.5);
  }
  return { x: { dtype: 'float32', shape: [features], data: x }, y: { dtype: 'int32', shape: [], data: y } };
}
