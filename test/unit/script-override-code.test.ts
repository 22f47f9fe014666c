import { describe, expect, it } from 'vitest';

import { overrideCode } from '../../src-main/api/script-override-code';

describe('the code to paste for kept overrides', () => {
  it('puts the DataLoader arguments in one call, the torch flags as statements, and the optimizer implementation where it is made', () => {
    expect(overrideCode({ 'optim.impl': 'fused', 'dataloader.num_workers': 4, 'dataloader.pin_memory': true, 'matmul.precision': 'high', 'cudnn.benchmark': true })).toEqual([
      'DataLoader(..., num_workers=4, pin_memory=True)',
      'torch.backends.cudnn.benchmark = True',
      'torch.set_float32_matmul_precision("high")',
      'optimizer = torch.optim.YourOptimizer(params, ..., fused=True)',
    ]);
    expect(overrideCode({ 'optim.impl': 'foreach' })).toEqual(['optimizer = torch.optim.YourOptimizer(params, ..., foreach=True)']);
    expect(overrideCode({ 'amp.dtype': 'bf16' })).toEqual(['# amp.dtype=bf16: no Python equivalent known to this version']);
  });
});
