// The convolution's paths (native/src/cpu/ops_conv.cpp): convolutions on fewer input pixels than
// kernel taps (the board network's heads: 3x3 on 2x2) run as a dense layer over all pixels, which
// the random gradient checks never draw; and every path can add its input gradient to one another
// consumer left (add_din). A C++ driver (conv-paths/check.cpp) runs 24 random shapes per path
// (dense, pointwise, im2col) against a direct convolution, in double and in float.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp-dir';
import { buildDriver, runDriver } from './engine-driver';

const tmp = tempDir('trainbench-conv-paths-');
let program = '';

beforeAll(() => {
  program = buildDriver('conv-paths', tmp.dir);
}, 120_000);
afterAll(() => tmp.cleanup());

describe('convolution paths against a direct convolution', () => {
  it('dense, pointwise and im2col match forward and backward, written or added, in double and float', () => {
    const r = runDriver(program);
    expect(r.status, r.output).toBe(0);
    for (const path of ['dense', 'pointwise', 'im2col']) expect(r.output).toContain(`checked 24 ${path} convolutions`);
  });
});
