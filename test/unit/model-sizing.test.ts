import { describe, expect, it } from 'vitest';

import type { DatasetSummary } from '../../src-main/api/datasets';
import { defaultWidths, MODEL_NAME_PATTERN, modelForData, sizedChoice, sizedFamilyOf, sizeModel, sizeModelsToDataset } from '../../src-main/api/model-sizing';

type Field = DatasetSummary['fields'][number];
const field = (name: string, dtype: Field['dtype'], shape: number[], stats: Partial<NonNullable<Field['stats']>> | null = {}, classes?: string[]): Field => ({
  name,
  dtype,
  shape,
  recordBytes: 4,
  stats: stats === null ? null : { mean: 0, std: 1, min: 0, max: 1, ...stats },
  ...(classes ? { classes } : {}),
});
/** What the import wizard makes of a CSV of 4 feature columns and a 3-class integer label. */
const irisCsv = [field('x', 'float32', [4]), field('y', 'int32', [], { min: 0, max: 2 })];

describe('models sized to a dataset', () => {
  it('sizes the mlp to an imported CSV: input [4], 3 classes; the cnn and board network say why they do not fit', () => {
    const [mlp, cnn, board] = sizeModelsToDataset({ fields: irisCsv });
    expect(mlp.problem).toBeNull();
    expect(mlp.spec).toMatchObject({ family: 'mlp', task: 'classification', input: [4], outputs: 3, hidden: defaultWidths('mlp') });
    expect(mlp.summary).toBe('input [4], 3 classes');
    expect(cnn.spec).toBeNull();
    expect(cnn.problem).toBe("field 'x' has shape [4] per record, not an image ([channels, height, width] or [height, width])");
    expect(board.problem).toMatch(/needs fields 'policy' and 'value'/);
  });

  it("counts a text label's classes by its names, and a float label as a regression target", () => {
    const text = [field('x', 'float32', [2]), field('y', 'int32', [], { max: 1 }, ['setosa', 'versicolor', 'virginica'])];
    expect(sizeModel('mlp', text).spec).toMatchObject({ outputs: 3, task: 'classification' });
    const regression = [field('x', 'float64', [6]), field('y', 'float32', [])];
    expect(sizeModel('mlp', regression).spec).toMatchObject({ task: 'regression', input: [6], outputs: 1 });
    expect(sizeModel('mlp', regression).summary).toBe('input [6], regression of 1 value');
    const twoTargets = [field('x', 'float32', [6]), field('y', 'float32', [2])];
    expect(sizeModel('mlp', twoTargets).spec).toMatchObject({ task: 'regression', outputs: 2 });
  });

  it('sizes the cnn to images: [C,H,W] as is, [H,W] as one channel; the mlp flattens them', () => {
    const images = [field('x', 'uint8', [28, 28]), field('y', 'uint8', [], { max: 9 })];
    expect(sizeModel('cnn', images).spec).toMatchObject({ family: 'cnn', input: [1, 28, 28], outputs: 10, channels: [32, 64, 64], strides: [1, 2, 2] });
    expect(sizeModel('mlp', images).spec).toMatchObject({ input: [784], outputs: 10 });
    const rgb = [field('x', 'uint8', [3, 8, 8]), field('y', 'int64', [1], { max: 4 })];
    expect(sizeModel('cnn', rgb, { widths: [16, 32] }).spec).toMatchObject({ input: [3, 8, 8], outputs: 5, channels: [16, 32], strides: [1, 2] });
  });

  it('sizes the board network to board data: input planes, policy classes from the policy field', () => {
    const board = [field('x', 'uint8', [104, 9, 9]), field('policy', 'float16', [1496]), field('value', 'float16', [])];
    expect(sizeModel('bottleneck_resnet', board, { widths: [8, 16], blocksPerStage: 1 }).spec).toMatchObject({
      family: 'bottleneck_resnet',
      input: [104, 9, 9],
      policyClasses: 1496,
      widths: [8, 16],
      layers: [1, 1],
      strides: [1, 2],
    });
    expect(sizeModel('mlp', board).problem).toBe("the dataset has no label field 'y' (it has 'x', 'policy', 'value')");
  });

  it('names the bad value of a label that cannot be sized', () => {
    const bad = (y: Field) => sizeModel('mlp', [field('x', 'float32', [3]), y]).problem;
    expect(bad(field('y', 'int32', [], { min: -1, max: 3 }))).toBe("the label 'y' has the negative value -1: class indices start at 0");
    expect(bad(field('y', 'int32', [], { max: 0 }))).toBe("the label 'y' has a single class (0): there is nothing to classify");
    expect(bad(field('y', 'int32', [], null))).toMatch(/number of classes is unknown/);
    expect(bad(field('y', 'int32', [3]))).toMatch(/holds 3 int32 values per record/);
    expect(sizeModel('mlp', [field('features', 'float32', [3])]).problem).toBe("the dataset has no input field 'x' (it has 'features')");
    expect(sizeModel('mlp', irisCsv, { widths: [0] }).problem).toMatch(/^mlp: hidden\.0: /);
  });

  it('round-trips the select value and checks saved names', () => {
    expect(sizedFamilyOf(sizedChoice('cnn'))).toBe('cnn');
    expect(sizedFamilyOf('sized:transformer')).toBeNull();
    expect(sizedFamilyOf('models/a.json')).toBeNull();
    for (const ok of ['mlp-iris', 'mlp_iris.json', 'A1']) expect(MODEL_NAME_PATTERN.test(ok)).toBe(true);
    for (const bad of ['../x', 'a/b', '.hidden', '-x', 'a.b', 'x.json.json', '', 'a b']) expect(MODEL_NAME_PATTERN.test(bad)).toBe(false);
  });
});

describe('the model shown when the data changes', () => {
  it('swaps a built-in that does not take the data for its family sized to it, and back', () => {
    expect(modelForData('mlp', { fields: irisCsv })).toBe('sized:mlp');
    // The cnn does not take a vector: the mlp, which does, is offered instead.
    expect(modelForData('cnn', { fields: irisCsv })).toBe('sized:mlp');
    const mnistLike = { fields: [field('x', 'uint8', [28, 28]), field('y', 'uint8', [], { max: 9 })] };
    expect(modelForData('cnn', mnistLike)).toBe('cnn');
    expect(modelForData('sized:cnn', null)).toBe('cnn');
    expect(modelForData('models/mine.json', { fields: irisCsv })).toBe('models/mine.json');
    expect(modelForData('mlp', null)).toBe('mlp');
    expect(modelForData('sized:cnn', { fields: irisCsv })).toBe('sized:mlp');
  });
});
