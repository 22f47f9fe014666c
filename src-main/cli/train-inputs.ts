import { existsSync, promises as fs, statSync } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { ModelSpec } from '../api/model-spec';
import { BUILTIN_MODELS, isBuiltinModel, ModelSpecSchema } from '../api/model-spec';
import type { DataSource } from '../api/training';

/** `--model`: a built-in name or a JSON spec file, validated against the contract. */
export async function resolveModel(value: string): Promise<{ spec: ModelSpec; name: string }> {
  let raw: unknown;
  let name: string;
  if (isBuiltinModel(value)) {
    raw = BUILTIN_MODELS[value];
    name = value;
  } else {
    if (!existsSync(value)) {
      throw new ApiError(
        'E_BAD_INPUT',
        `--model ${JSON.stringify(value)} is neither a built-in model (${Object.keys(BUILTIN_MODELS).join(', ')}) nor a spec file`,
      );
    }
    try {
      raw = JSON.parse(await fs.readFile(value, 'utf8'));
    } catch (err) {
      throw new ApiError('E_BAD_INPUT', `model spec ${value} is not valid JSON: ${(err as Error).message}`);
    }
    name = path.basename(value);
  }
  const parsed = ModelSpecSchema.safeParse(raw);
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `model spec ${name} is invalid: ${formatIssues(parsed.error, 'spec')}`);
  return { spec: parsed.data, name };
}

/**
 * `--data`: "fashion-mnist" (Debian's package), "example-board" (built in), "dataset:<train>[,<test>]" for
 * caches in the workspace, a folder holding the four MNIST-style IDX files, or
 * "train-images,train-labels[,test-images,test-labels]".
 */
export function resolveData(value: string): DataSource {
  if (value === 'fashion-mnist') return { kind: 'fashion-mnist' };
  if (value === 'example-board') return { kind: 'example-board' };
  if (value.startsWith('dataset:')) {
    const [train, test] = value.slice('dataset:'.length).split(',');
    return { kind: 'dataset', train, test: test || undefined };
  }
  const parts = value.split(',');
  if (parts.length === 1 && existsSync(value) && statSync(value).isDirectory()) {
    return { kind: 'fashion-mnist', dir: path.resolve(value) };
  }
  if (parts.length === 2 || parts.length === 4) {
    const [images, labels, testImages, testLabels] = parts.map((p) => path.resolve(p));
    return {
      kind: 'idx',
      train: { images, labels },
      test: testImages ? { images: testImages, labels: testLabels } : undefined,
    };
  }
  throw new ApiError(
    'E_BAD_INPUT',
    `--data ${JSON.stringify(value)}: use "fashion-mnist", "example-board", "dataset:<train>[,<test>]", a folder of MNIST-style IDX files, or train-images,train-labels[,test-images,test-labels]`,
  );
}
