// The 1x1 stride-1 convolution is one tap whose row pointers are the input's own
// rows (channels-last, cpu/ops_conv.cpp): the random gradient checks reach that
// shape only on some seeds, so this walks seeds until it has checked it several times.
import { describe, expect, it } from 'vitest';

import { loadAddon } from '../helpers/native';

const addon = loadAddon();

describe('pointwise convolution (channels-last rows, one tap)', () => {
  it('matches finite differences in float64', () => {
    const pointwise: { maxRelError: number; shapes: string }[] = [];
    for (let seed = 1; seed <= 400 && pointwise.length < 5; seed++) {
      const r = addon.gradcheck('conv2d', seed);
      if (/k=1x1 stride=1 pad=0/.test(r.shapes)) pointwise.push(r);
    }
    expect(pointwise.length, 'seeds that drew a 1x1 stride-1 convolution').toBeGreaterThanOrEqual(5);
    for (const r of pointwise) expect(r.maxRelError, r.shapes).toBeLessThan(1e-5);
  });
});
