// The float GEMM (native/src/cpu/gemm.cpp): the dot kernel that reads both operands in place when
// B is transposed and the reduction is long (the convolutions' weight gradients), and the packed
// kernel whose C tiles the threads share out. The gradient checks run in double and never reach
// either, so a C++ driver (gemm-paths/check.cpp) checks both against a double reference on edge
// shapes, every transpose, and that 1, 2 and 3 threads give the same bits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp-dir';
import { buildDriver, cpuKernels, runDriver } from './engine-driver';

const tmp = tempDir('trainbench-gemm-paths-');
let program = '';

beforeAll(() => {
  program = buildDriver('gemm-paths', tmp.dir);
}, 120_000);
afterAll(() => tmp.cleanup());

describe('float GEMM paths (dot kernel, packed kernel)', () => {
  it.each(cpuKernels())('match a double reference on edge shapes and every transpose, the same bits with 1, 2 and 3 threads (%s kernels)', (kernel) => {
    const r = runDriver(program, { TB_CPU_KERNEL: kernel });
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain(`kernel ${kernel}`);
    expect(r.output).toMatch(/checked 23 products/);
  });
});
