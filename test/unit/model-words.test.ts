import { describe, expect, it } from 'vitest';

import { modelWords } from '../../src-main/api/model-spec';
import { optimiseTargetTitle } from '../../src-main/api/optimise';

describe('a model in a title says the sizes that tell it apart (UI walk: two spec files read as one model)', () => {
  it("names a family alone at its defaults, as every run's title did", () => {
    expect(modelWords({ family: 'mlp', input: [1, 28, 28], outputs: 10, hidden: [256, 128] })).toBe('mlp');
    expect(modelWords({ family: 'cnn', channels: [32, 64, 64], hidden: 128 })).toBe('cnn');
    expect(modelWords({ family: 'bottleneck_resnet' })).toBe('bottleneck_resnet');
  });

  it('adds the sizes that differ from the defaults', () => {
    expect(modelWords({ family: 'mlp', hidden: [512, 256] })).toBe('mlp (hidden 512-256)');
    expect(modelWords({ family: 'mlp', hidden: [] })).toBe('mlp (hidden none)');
    expect(modelWords({ family: 'cnn', channels: [16, 32], hidden: 0 })).toBe('cnn (channels 16-32, hidden 0)');
    expect(modelWords({ family: 'bottleneck_resnet', widths: [32, 64, 128, 192], layers: [3, 4, 6, 3] })).toBe('bottleneck_resnet (widths 32-64-128-192, layers 3-4-6-3)');
  });

  it('leaves out what a tampered run file holds instead of sizes', () => {
    expect(modelWords({ family: 'mlp', hidden: ['\x1b[2J', 1] })).toBe('mlp');
    expect(modelWords({ family: 'mlp', hidden: Array.from({ length: 1000 }, () => 1) })).toBe('mlp');
    expect(modelWords({ family: 7 })).toBe('model');
  });

  it("names an optimisation's target the same way", () => {
    expect(optimiseTargetTitle({ spec: { family: 'mlp', hidden: [64] }, data: { kind: 'fashion-mnist' } as never })).toBe('mlp (hidden 64) on fashion-mnist');
  });
});
