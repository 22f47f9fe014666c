import { describe, expect, it } from 'vitest';

import { formatIssues } from '../../src-main/api/format-issues';
import { BUILTIN_MODELS, MAX_INPUT_VALUES, ModelSpecSchema } from '../../src-main/api/model-spec';
import { TrainOptionsSchema } from '../../src-main/api/training';

describe('model spec schema', () => {
  it('fills the documented defaults of the board network (docs/architecture.md)', () => {
    expect(ModelSpecSchema.parse(BUILTIN_MODELS.bottleneck_resnet)).toEqual({
      family: 'bottleneck_resnet',
      input: [104, 9, 9],
      stemWidth: 24,
      layers: [2, 2, 2, 1],
      strides: [1, 2, 2, 2],
      widths: [24, 48, 96, 144],
      expansion: 4,
      headChannels: 128,
      policyClasses: 1496,
    });
  });

  it('parses every built-in model', () => {
    for (const spec of Object.values(BUILTIN_MODELS)) expect(ModelSpecSchema.safeParse(spec).success).toBe(true);
  });

  it.each([
    [{ family: 'mlp', input: [784], outputs: 10, hidden: [0] }, 'hidden'],
    [{ family: 'cnn', input: [1, 28, 28], outputs: 10, channels: [8, 8], strides: [1] }, 'strides'],
    [{ family: 'cnn', input: [1, 28, 28], outputs: 10, kernel: 2 }, 'kernel'],
    [{ family: 'bottleneck_resnet', widths: [1, 2] }, 'layers'],
    [{ family: 'mlp', input: [784], outputs: 10, colour: 'red' }, 'colour'],
  ])('rejects %j, naming %s', (spec, field) => {
    const r = ModelSpecSchema.safeParse(spec);
    expect(r.success).toBe(false);
    if (!r.success) expect(formatIssues(r.error, 'spec')).toContain(field);
  });
});

describe('training options schema', () => {
  it('defaults to the SGD of docs/architecture.md', () => {
    expect(TrainOptionsSchema.parse({}).optimizer).toEqual({ kind: 'sgd', lr: 0.01, momentum: 0.9, weightDecay: 1e-4 });
  });
  it('rejects a zero batch and an unknown optimizer', () => {
    expect(TrainOptionsSchema.safeParse({ batchSize: 0 }).success).toBe(false);
    expect(TrainOptionsSchema.safeParse({ optimizer: { kind: 'lion' } }).success).toBe(false);
  });
  it('takes the devices the engine knows and refuses any other without quoting it (a planted saved state)', () => {
    for (const device of ['cpu', 'auto', 'cuda', 'cuda:0', 'cuda:15']) expect(TrainOptionsSchema.parse({ device }).device).toBe(device);
    for (const device of ['gpu', 'cuda:', 'cuda:-1', 'CPU', ' cpu', 'cpu\nverdict    FORGED', 'cuda:0\x1b[2K']) {
      const parsed = TrainOptionsSchema.safeParse({ device });
      expect(parsed.success, device).toBe(false);
      const message = parsed.error!.issues[0].message;
      expect(message).toBe("must be 'cpu', 'cuda', 'cuda:N' or 'auto'");
    }
  });
});

describe('model spec sizes', () => {
  it('refuses an input whose size product would overflow the engine (2^20 x 4 once became a shape of 0)', () => {
    const huge = ModelSpecSchema.safeParse({ family: 'mlp', input: [2 ** 20, 2 ** 20, 2 ** 20, 2 ** 20], outputs: 10 });
    expect(huge.success).toBe(false);
    expect(JSON.stringify(huge.error?.issues)).toContain(`more than ${MAX_INPUT_VALUES} values per sample`);
    expect(ModelSpecSchema.safeParse({ family: 'cnn', input: [1024, 1024, 1024], outputs: 10 }).success).toBe(false);
    expect(ModelSpecSchema.safeParse({ family: 'mlp', input: [1, 28, 28], outputs: 10 }).success).toBe(true);
  });
});
