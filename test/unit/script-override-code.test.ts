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
    expect(overrideCode({ 'compile.mode': 'max-autotune' })).toEqual(['model.compile(mode="max-autotune")  # torch 2.2+, in place; before 2.2: model = torch.compile(model, mode="max-autotune")']);
    expect(overrideCode({ 'optim.set_to_none': true })).toEqual(['optimizer.zero_grad(set_to_none=True)']);
    expect(overrideCode({ 'copy.non_blocking': true })).toEqual(['inputs = inputs.to(device, non_blocking=True)  # each batch tensor; with pin_memory=True on the DataLoader']);
    expect(overrideCode({ 'ddp.static_graph': true, 'ddp.bucket_cap_mb': 100, 'dataloader.num_workers': 2 })).toEqual([
      'DataLoader(..., num_workers=2)',
      'model = DistributedDataParallel(model, ..., bucket_cap_mb=100, static_graph=True)',
    ]);
    expect(overrideCode({ 'unknown.key': 1 })).toEqual(['# unknown.key=1: no Python equivalent known to this version']);
  });

  it('writes mixed precision as the autocast block for the device it ran on, with the GradScaler lines for fp16', () => {
    expect(overrideCode({ 'amp.dtype': 'bf16' }, { device: 'cpu' })).toEqual([
      'with torch.autocast(device_type="cpu", dtype=torch.bfloat16):',
      '    output = model(inputs)  # the forward and the loss, as the script computes them',
      '    loss = loss_fn(output, targets)',
    ]);
    const fp16 = overrideCode({ 'amp.dtype': 'fp16' }, { device: 'cuda:1' });
    expect(fp16[0]).toBe('with torch.autocast(device_type="cuda", dtype=torch.float16):');
    expect(fp16.slice(3)).toEqual([
      'scaler = torch.amp.GradScaler("cuda")  # once, before the loop',
      'scaler.scale(loss).backward()  # instead of loss.backward()',
      'scaler.unscale_(optimizer)  # before clip_grad_norm_, where the script clips',
      'scaler.step(optimizer)  # instead of optimizer.step()',
      'scaler.update()',
    ]);
  });

  it('converts the model and each 4-D batch for channels_last, and writes nothing for it turned off', () => {
    expect(overrideCode({ 'memory.channels_last': true })).toEqual([
      'model = model.to(memory_format=torch.channels_last)',
      'inputs = inputs.to(memory_format=torch.channels_last)  # each 4-D batch, before model(inputs)',
    ]);
    expect(overrideCode({ 'memory.channels_last': false })).toEqual([]);
  });
});
