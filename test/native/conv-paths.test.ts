// The convolution's paths (native/src/cpu/ops_conv.cpp, channels-last): convolutions on fewer input
// pixels than kernel taps (the board network's heads: 3x3 on 2x2) run as a dense layer over all
// pixels, which the random gradient checks never draw; the indirect kernels at stride 1 and at
// stride 2 (input gradient by stride phase); every path can add its input gradient to one another
// consumer left (add_din). A C++ driver (conv-paths/check.cpp) runs 24 random shapes per path
// against a direct convolution, in double and in float, with NaN past the rows the kernels may
// load but must not use, and the same float bits with 1, 2 and 3 threads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp-dir';
import { buildDriver, cpuKernels, runDriver } from './engine-driver';

const tmp = tempDir('trainbench-conv-paths-');
let program = '';

beforeAll(() => {
  program = buildDriver('conv-paths', tmp.dir);
}, 120_000);
afterAll(() => tmp.cleanup());

describe('convolution paths against a direct convolution', () => {
  // Every kernel this CPU can run: users without AVX-512 get the AVX2 or generic one (16-wide tiles).
  it.each(cpuKernels())(
    'dense, stride-1 and strided match forward and backward, written or added, in double and float, at any thread count (%s kernels)',
    (kernel) => {
      const r = runDriver(program, { TB_CPU_KERNEL: kernel });
      expect(r.status, r.output).toBe(0);
      expect(r.output).toContain(`kernel ${kernel}`);
      for (const path of ['dense', 'stride-1', 'strided']) expect(r.output).toContain(`checked 24 ${path} convolutions`);
    },
    60_000,
  );
});
