import { ApiError } from '../../../api/errors';
import { floatToHalf } from '../float16';
import type { RecordSource } from './record-source';
import { checkAborted } from './record-source';

export const BOARD_PLANES = 104;
export const BOARD_SQUARES = 81;
export const POLICY_CLASSES = 1496;
const HIDDEN = 32;
const GENERATOR_VERSION = 1;
/** One teacher for every seed: different seeds draw different positions labelled by the same network. */
const TEACHER_SEED = 0x7eac4e5;

/** splitmix32-style generator: small, fast, and the same on every platform. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 2 ** 32;
  };
}

function gaussian(r: () => number): number {
  return Math.sqrt(-2 * Math.log(Math.max(r(), 1e-12))) * Math.cos(2 * Math.PI * r());
}

/**
 * The fixed random teacher: features -> (per-plane and per-square occupancy)
 * -> tanh hidden layer -> policy logits and a value. A student network sees
 * the same planes, so the targets are learnable; they are not noise.
 */
class Teacher {
  readonly w1: Float32Array; // (planes + squares) x hidden
  readonly w2: Float32Array; // hidden x policy
  readonly w3: Float32Array; // hidden
  readonly density: Float32Array; // per plane occupancy probability

  constructor() {
    const r = rng(TEACHER_SEED);
    const inputs = BOARD_PLANES + BOARD_SQUARES;
    this.w1 = new Float32Array(inputs * HIDDEN).map(() => gaussian(r) * Math.sqrt(2 / inputs) * 4);
    this.w2 = new Float32Array(HIDDEN * POLICY_CLASSES).map(() => gaussian(r) * 1.5);
    this.w3 = new Float32Array(HIDDEN).map(() => gaussian(r));
    this.density = new Float32Array(BOARD_PLANES).map(() => 0.02 + 0.2 * r());
  }

  /** Writes one record: features (104*81 uint8), policy (1496 float16), value (float16). */
  record(index: number, seed: number, features: Uint8Array, policy: Uint16Array, value: Uint16Array, at: number): void {
    const r = rng(Math.imul(seed + 1, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca77));
    const f = features.subarray(at * BOARD_PLANES * BOARD_SQUARES, (at + 1) * BOARD_PLANES * BOARD_SQUARES);
    const pooled = new Float32Array(BOARD_PLANES + BOARD_SQUARES);
    for (let p = 0; p < BOARD_PLANES; p++) {
      const d = this.density[p];
      for (let s = 0; s < BOARD_SQUARES; s++) {
        const on = r() < d ? 1 : 0;
        f[p * BOARD_SQUARES + s] = on;
        pooled[p] += on / BOARD_SQUARES;
        pooled[BOARD_PLANES + s] += on / 8;
      }
    }
    const h = new Float32Array(HIDDEN);
    for (let i = 0; i < pooled.length; i++) {
      const v = pooled[i] - (i < BOARD_PLANES ? this.density[i] : 1.3);
      if (v === 0) continue;
      for (let j = 0; j < HIDDEN; j++) h[j] += v * this.w1[i * HIDDEN + j];
    }
    let z = 0;
    for (let j = 0; j < HIDDEN; j++) {
      h[j] = Math.tanh(h[j]);
      z += h[j] * this.w3[j];
    }
    const logits = new Float32Array(POLICY_CLASSES);
    let max = -Infinity;
    for (let j = 0; j < HIDDEN; j++) {
      const hj = h[j];
      const row = j * POLICY_CLASSES;
      for (let k = 0; k < POLICY_CLASSES; k++) logits[k] += hj * this.w2[row + k];
    }
    for (let k = 0; k < POLICY_CLASSES; k++) max = Math.max(max, logits[k]);
    let sum = 0;
    for (let k = 0; k < POLICY_CLASSES; k++) sum += logits[k] = Math.exp(logits[k] - max);
    const out = policy.subarray(at * POLICY_CLASSES, (at + 1) * POLICY_CLASSES);
    for (let k = 0; k < POLICY_CLASSES; k++) out[k] = floatToHalf(logits[k] / sum);
    value[at] = floatToHalf(1 / (1 + Math.exp(-2 * z)));
  }
}

/** The built-in board dataset: `records` positions from `seed`, the same for any chunking. */
export function boardSource(records: number, seed: number): RecordSource {
  if (!Number.isInteger(records) || records < 1) throw new ApiError('E_BAD_INPUT', `records must be a positive integer, got ${records}`);
  const teacher = new Teacher();
  return {
    kind: 'synthetic-board',
    description: `synthetic board positions (${records} records, seed ${seed}, teacher v${GENERATOR_VERSION})`,
    records,
    fields: [
      { name: 'x', dtype: 'uint8', shape: [BOARD_PLANES, 9, 9] },
      { name: 'policy', dtype: 'float16', shape: [POLICY_CLASSES] },
      { name: 'value', dtype: 'float16', shape: [] },
    ],
    files: [],
    sourceBytes: records * (BOARD_PLANES * BOARD_SQUARES + 2 * POLICY_CLASSES + 2),
    options: { records, seed, generator: GENERATOR_VERSION },
    uncachedReason: 'the records are generated, there are no source files to read',
    rawLayout: () => null,
    async *chunks(maxRecords, signal) {
      for (let done = 0; done < records; ) {
        checkAborted(signal);
        const n = Math.min(maxRecords, records - done);
        const features = new Uint8Array(n * BOARD_PLANES * BOARD_SQUARES);
        const policy = new Uint16Array(n * POLICY_CLASSES);
        const value = new Uint16Array(n);
        for (let i = 0; i < n; i++) teacher.record(done + i, seed, features, policy, value, i);
        yield { count: n, fields: [features, new Uint8Array(policy.buffer), new Uint8Array(value.buffer)] };
        done += n;
        // Let the event loop breathe between chunks (progress, cancel, the UI).
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
  };
}
