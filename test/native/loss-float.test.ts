// The float soft-target cross-entropy takes its exps in float, vectorised (native/src/cpu/ops_loss.cpp):
// a C++ driver (loss-float/check.cpp) compares loss and gradient with the double path on the board
// policy's 1496 classes and on edge shapes (one class, underflowing exps, masked rows).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp-dir';
import { buildDriver, runDriver } from './engine-driver';

const tmp = tempDir('trainbench-loss-float-');
let program = '';

beforeAll(() => {
  program = buildDriver('loss-float', tmp.dir);
}, 120_000);
afterAll(() => tmp.cleanup());

describe('float soft-target cross-entropy', () => {
  it('matches the double path to 1e-5 in loss and gradient', () => {
    const r = runDriver(program);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain('checked 5 shapes');
  });
});
