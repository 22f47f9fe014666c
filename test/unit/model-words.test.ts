// A model spec in words, as reports show it: every family, and what is no spec.
import { describe, expect, it } from 'vitest';

import { modelSpecWords } from '../../src-main/api/model-words';

describe('modelSpecWords', () => {
  it("says the example's MLP as a reader would, its image's single channel left out", () => {
    expect(modelSpecWords({ family: 'mlp', task: 'classification', input: [1, 28, 28], outputs: 10, hidden: [256, 128], dropout: 0 })).toBe('MLP, input 28x28, hidden layers 256-128, 10 classes');
  });

  it('says a CNN with its convolutions, dropout and a regression head', () => {
    const spec = { family: 'cnn', task: 'regression', input: [3, 32, 32], outputs: 2, channels: [16, 32], strides: [1, 2], kernel: 5, batchNorm: false, hidden: 0, dropout: 0.25 };
    expect(modelSpecWords(spec)).toBe('CNN, input 3x32x32, conv channels 16-32 (strides 1-2, 5x5 kernels), no hidden layer, dropout 0.25, 2 regression outputs');
  });

  it('says the board network by its stages and heads, defaults filled in', () => {
    expect(modelSpecWords({ family: 'bottleneck_resnet' })).toBe('bottleneck ResNet, input 104x9x9, stem 24 channels, stages of 2-2-2-1 blocks (widths 24-48-96-144, strides 1-2-2-2, expansion 4), head 128 channels, 1496 policy classes + value');
  });

  it('gives null for what is no spec, so the caller quotes it whole', () => {
    expect(modelSpecWords({ family: 'mlp', input: [784] })).toBeNull();
    expect(modelSpecWords({ family: 'transformer', layers: 12 })).toBeNull();
    expect(modelSpecWords('mlp')).toBeNull();
  });
});
