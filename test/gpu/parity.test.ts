// CUDA kernels against the CPU backend on random inputs (native/src/cuda/cuda_parity.cu).
// Runs where a CUDA device is present (`npm run test:gpu`); elsewhere every test
// is skipped and the reason printed, so `npm test` stays green on GPU-less machines.
import { describe, expect, it } from 'vitest';

import { loadAddon } from '../helpers/native';

const addon = loadAddon();
const cuda = addon.devices().cuda;
const SEEDS = 8;

if (!cuda.available) {
  console.log(`GPU tests skipped: ${cuda.compiled ? cuda.reason : 'this build has no CUDA backend'}`);
}

const parity = addon;

describe.skipIf(!cuda.available)('CUDA kernels match the CPU backend', () => {
  it.each(parity.cudaParityOps().filter((op) => op !== 'oom'))('%s', (op) => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = parity.cudaParity(op, seed);
      expect(r.maxRelError, `${op} ${r.shapes}`).toBeLessThanOrEqual(r.tolerance);
    }
  });

  it('an impossible allocation is E_OOM with the numbers, and the next allocation works', () => {
    const r = parity.cudaParity('oom', 1);
    expect(r.maxRelError).toBe(0);
    expect(r.message).toMatch(/out of GPU memory on cuda:0: requested \d+ bytes, \d+ free of \d+/);
    expect(parity.cudaMemory().ooms).toBeGreaterThanOrEqual(1);
  });
});

describe('GPU checks on a machine without CUDA', () => {
  it.skipIf(cuda.available)('refuse with E_CUDA and the reason, never crash', () => {
    expect(() => parity.cudaParity('relu', 1)).toThrowError(expect.objectContaining({ code: 'E_CUDA' }));
  });
});
