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

/** Where Fashion-MNIST is looked for when no folder is given: TRAINBENCH_FASHION_MNIST, else Debian's. */
export function defaultFashionMnistDir(): string {
  return process.env.TRAINBENCH_FASHION_MNIST ?? DEBIAN_FASHION_MNIST_DIR;
}

export function fashionMnistDir(dir?: string): string {
  const chosen = dir ?? defaultFashionMnistDir();
  const missing = Object.values(FILES).filter((f) => !existsSync(path.join(chosen, f)));
  if (missing.length) {
    throw new ApiError(
      'E_BAD_INPUT',
      `Fashion-MNIST not found in ${chosen} (missing ${missing.join(', ')}): install Debian's dataset-fashion-mnist package or pass its folder`,
    );
  }
  return chosen;
}

/** The cache name for a folder of one's own holding the four files: the folder's name, made a valid dataset name. */
export function idxFolderName(dir: string): string {
  return path.basename(path.resolve(dir)).replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^[._-]+/, '').slice(0, 48) || 'idx';
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
