import { existsSync } from 'node:fs';
import path from 'node:path';

import type { SourceSpec } from '../../api/datasets';
import { ApiError } from '../../api/errors';

/** Where Debian's dataset-fashion-mnist package puts the files. */
export const DEBIAN_FASHION_MNIST_DIR = '/usr/share/datasets/fashion-mnist';
const FILES = {
  trainImages: 'train-images-idx3-ubyte.gz',
  trainLabels: 'train-labels-idx1-ubyte.gz',
  testImages: 't10k-images-idx3-ubyte.gz',
  testLabels: 't10k-labels-idx1-ubyte.gz',
};

export function fashionMnistDir(dir?: string): string {
  const chosen = dir ?? process.env.TRAINBENCH_FASHION_MNIST ?? DEBIAN_FASHION_MNIST_DIR;
  const missing = Object.values(FILES).filter((f) => !existsSync(path.join(chosen, f)));
  if (missing.length) {
    throw new ApiError(
      'E_BAD_INPUT',
      `Fashion-MNIST not found in ${chosen} (missing ${missing.join(', ')}): install Debian's dataset-fashion-mnist package or pass its folder`,
    );
  }
  return chosen;
}

/** The train and test splits as IDX sources: images become `x`, labels `y`. */
export function fashionMnistSpecs(dir: string): { train: SourceSpec; test: SourceSpec } {
  const pair = (images: string, labels: string): SourceSpec => ({
    kind: 'idx',
    files: [
      { path: path.join(dir, images), field: 'x' },
      { path: path.join(dir, labels), field: 'y' },
    ],
  });
  return { train: pair(FILES.trainImages, FILES.trainLabels), test: pair(FILES.testImages, FILES.testLabels) };
}
