// The float GEMM reads both operands in place when B is transposed and the reduction is long
// (native/src/cpu/gemm.cpp gemm_dot, the convolutions' weight gradients). The gradient checks run
// in double and never reach it, so a C++ driver (gemm-dot/check.cpp) checks it against a double
// reference on edge shapes, and that 1 and 2 threads give the same bits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp-dir';
import { buildDriver, runDriver } from './engine-driver';

const tmp = tempDir('trainbench-gemm-dot-');
let program = '';

beforeAll(() => {
  program = buildDriver('gemm-dot', tmp.dir);
}, 120_000);
afterAll(() => tmp.cleanup());

describe('GEMM dot-kernel path (A . B^T, long reduction)', () => {
  it('matches a double reference on edge shapes, the same with 1 and 2 threads', () => {
    const r = runDriver(program);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toMatch(/checked 7 products/);
  });
});
