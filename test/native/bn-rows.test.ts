// Batch norm on (M, C) rows (HW == 1): the layout of channels-last activations and of dense
// features, where a channel is a column with stride C. The rows path (native/src/cpu/ops_batchnorm_rows.cpp)
// runs along C over fixed blocks of rows; a C++ driver (bn-rows/check.cpp) checks it against a double
// reference on C in {1, 3, 24, 96, 577} x M in {1, 2, 7, 1000, 20736} and for the same bits at 1, 2
// and 3 threads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp-dir';
import { buildDriver, runDriver } from './engine-driver';

const tmp = tempDir('trainbench-bn-rows-');
let result: { status: number | null; output: string } = { status: null, output: '' };

// One run checks both: values against the reference, then the bits at each thread count.
beforeAll(() => {
  result = runDriver(buildDriver('bn-rows', tmp.dir));
}, 180_000);
afterAll(() => tmp.cleanup());

describe('batch norm on channels-last rows', () => {
  it('forward train, eval and backward (plain, ReLU folded, din null) match a double reference', () => {
    expect(result.output, result.output).not.toContain('MISMATCH');
    expect(result.output).toContain('checked 25 shapes in float');
    expect(result.output).toContain('checked 24 shapes in double');
  });

  it('gives the same bits with 1, 2 and 3 threads', () => {
    expect(result.status, result.output).toBe(0);
    expect(result.output).toContain('same bits at 1, 2 and 3 threads on 25 shapes');
  });
});
