// Convolutions on fewer input pixels than kernel taps (the board network's heads: 3x3 on 2x2)
// run as a dense layer over all pixels (native/src/cpu/ops_conv.cpp). The random gradient checks
// never draw such a small input, so a C++ driver (conv-dense/check.cpp) runs the engine's path
// on 40 random dense shapes against a direct convolution, in double and in float.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp-dir';
import { buildDriver, runDriver } from './engine-driver';

const tmp = tempDir('trainbench-conv-dense-');
let program = '';

beforeAll(() => {
  program = buildDriver('conv-dense', tmp.dir);
}, 120_000);
afterAll(() => tmp.cleanup());

describe('dense convolution (fewer pixels than taps)', () => {
  it('matches a direct convolution forward and backward, in double and float', () => {
    const r = runDriver(program);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toMatch(/checked 40 dense convolutions/);
  });
});
