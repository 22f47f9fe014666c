// Every op's backward against central finite differences in float64, on random
// shapes and random non-zero inputs (native/src/train/gradcheck.cpp).
import { describe, expect, it } from 'vitest';

import { loadAddon, thrown } from '../helpers/native';

const addon = loadAddon();
const SEEDS = 12;

describe('gradient checks (float64, central differences)', () => {
  it('covers every op the engine has', () => {
    expect(addon.gradcheckOps()).toEqual(
      expect.arrayContaining(['linear', 'conv2d', 'batchnorm', 'relu', 'add', 'global_avgpool', 'flatten', 'dropout',
        'softmax_ce', 'softmax_ce_soft', 'bce_logits', 'mse']),
    );
  });

  it.each(addon.gradcheckOps())('%s matches finite differences on random shapes', (op) => {
    let worst = { maxRelError: 0, shapes: '', checked: 0 };
    let checked = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = addon.gradcheck(op, seed);
      checked += r.checked;
      if (r.maxRelError >= worst.maxRelError) worst = r;
    }
    console.log(`gradcheck ${op}: worst relative error ${worst.maxRelError.toExponential(2)} (${worst.shapes}), ${checked} entries`);
    expect(checked).toBeGreaterThan(0);
    expect(worst.maxRelError, `worst case ${worst.shapes}`).toBeLessThan(1e-5);
  });

  it('names an unknown op', () => {
    const err = thrown(() => addon.gradcheck('softmax_xent', 1));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toContain("'softmax_xent'");
  });
});
