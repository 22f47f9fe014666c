// CUDA kernels against the CPU backend (or double references) on random inputs
// (native/src/cuda/cuda_parity.cu and cuda_parity_step.cu). Runs where a CUDA
// device is present; elsewhere it skips with the reason, or fails with it under
// TB_REQUIRE_GPU=1 (gpu-gate.ts). The tolerances and the NaN rule are also
// proven on the host: test/native/cuda-host.test.ts.
import { describe, expect, it } from 'vitest';

import { loadAddon } from '../helpers/native';
import { gpuAvailable } from './gpu-gate';

const addon = loadAddon();
const gpu = gpuAvailable('GPU parity tests');
const SEEDS = 8;
const ops = addon.cudaParityOps();
// Forced onto cuBLASLt: they need the library (tools/device/run.sh points TB_CUBLASLT at PyTorch's copy).
const needsCublasLt = (op: string) => op.startsWith('gemm_lt_');
const lt = addon.cublasLt();
if (gpu && !lt.loaded) console.log(`cuBLASLt parity checks skipped: ${lt.reason} (set TB_CUBLASLT to libcublasLt.so)`);

describe.skipIf(!gpu)('CUDA kernels match the CPU backend', () => {
  it.each(ops.filter((op) => op !== 'oom' && !needsCublasLt(op)))('%s', (op) => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = addon.cudaParity(op, seed);
      // NaN fails here too: NaN <= tolerance is false.
      expect(r.maxRelError, `${op} seed ${seed}: ${r.shapes}`).toBeLessThanOrEqual(r.tolerance);
    }
  });

  it('splits a long K into slices whose sum is the same bits on every run, and splits the board network\'s weight gradients', () => {
    const r = addon.cudaParity('gemm_tc_split', 1);
    expect(r.sameBits).toBe(true);
    expect(r.shapes).toMatch(/, [2-9] slices$/);
    // (96 x 864) output tiles cover 28 of an H100's 132 SMs; K = 60,750 splits into enough slices to fill them twice.
    expect(r.boardSlices).toBe(10);
  });

  it('an impossible allocation is E_OOM with the numbers, and the next allocation works', () => {
    const r = addon.cudaParity('oom', 1);
    expect(r.maxRelError).toBe(0);
    expect(r.message).toMatch(/out of GPU memory on cuda:0: requested \d+ bytes, \d+ free of \d+/);
    expect(addon.cudaMemory().ooms).toBeGreaterThanOrEqual(1);
  });
});

describe.skipIf(!gpu || !lt.loaded)('cuBLASLt forced, in each precision', () => {
  it.each(ops.filter(needsCublasLt))('%s', (op) => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = addon.cudaParity(op, seed);
      expect(r.maxRelError, `${op} seed ${seed}: ${r.shapes}`).toBeLessThanOrEqual(r.tolerance);
    }
  });
});

describe('cudaParity on any machine', () => {
  it.skipIf(gpu)('refuse with E_CUDA and the reason, never crash', () => {
    expect(() => addon.cudaParity('relu', 1)).toThrowError(expect.objectContaining({ code: 'E_CUDA' }));
  });

  it.skipIf(!addon.devices().cuda.compiled)('list every op once, and name the known ones when asked for an unknown one', () => {
    expect(new Set(ops).size).toBe(ops.length);
    for (const op of ['relu', 'gemm_f32', 'conv2d', 'prefetch', 'gemm_engine', 'gemm_tc_split', 'gemm_lt_bf16', 'conv_chunked', 'graph_capture', 'allocator_streams'])
      expect(ops).toContain(op);
    expect(() => addon.cudaParity('nope', 1)).toThrowError(expect.objectContaining({ code: 'E_BAD_INPUT', message: expect.stringMatching(/unknown op 'nope' \(known: relu, /) }));
  });
});
