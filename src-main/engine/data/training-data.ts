import { existsSync } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../../api/errors';
import type { DataSource } from '../../api/training';
import type { NativeField } from '../native-addon';
import { readIdx, type IdxArray } from './idx-reader';

/** Where Debian's dataset-fashion-mnist package puts the files. */
export const DEBIAN_FASHION_MNIST_DIR = '/usr/share/datasets/fashion-mnist';
const FASHION_FILES = {
  trainImages: 'train-images-idx3-ubyte.gz',
  trainLabels: 'train-labels-idx1-ubyte.gz',
  testImages: 't10k-images-idx3-ubyte.gz',
  testLabels: 't10k-labels-idx1-ubyte.gz',
};

export type Fields = Record<string, NativeField>;
export interface TrainingData {
  train: Fields;
  test?: Fields;
  description: string;
}

export function fashionMnistDir(dir?: string): string {
  const chosen = dir ?? process.env.TRAINBENCH_FASHION_MNIST ?? DEBIAN_FASHION_MNIST_DIR;
  const missing = Object.values(FASHION_FILES).filter((f) => !existsSync(path.join(chosen, f)));
  if (missing.length) {
    throw new ApiError(
      'E_BAD_INPUT',
      `Fashion-MNIST not found in ${chosen} (missing ${missing.join(', ')}): install Debian's dataset-fashion-mnist package or pass its folder`,
    );
  }
  return chosen;
}

/** Mean and standard deviation of uint8 pixels scaled to [0, 1], for input normalisation. */
function pixelStats(data: Uint8Array): { mean: number; std: number } {
  let sum = 0;
  let sq = 0;
  for (let i = 0; i < data.length; i++) {
    sum += data[i];
    sq += data[i] * data[i];
  }
  const mean = sum / data.length / 255;
  const variance = sq / data.length / 65025 - mean * mean;
  return { mean, std: Math.sqrt(Math.max(variance, 1e-12)) };
}

function imageField(images: IdxArray, file: string, stats: { mean: number; std: number }): NativeField {
  if (images.dtype !== 'uint8' || images.dims.length !== 3) {
    throw new ApiError('E_DATA', `${file}: expected uint8 images of shape N x H x W, found ${images.dtype} ${images.dims.join('x')}`);
  }
  // (x / 255 - mean) / std, applied by the engine as x * scale + offset while batching
  return {
    dtype: 'uint8',
    shape: [1, images.dims[1], images.dims[2]],
    data: images.data,
    scale: 1 / (255 * stats.std),
    offset: -stats.mean / stats.std,
  };
}

function labelField(labels: IdxArray, file: string, count: number): NativeField {
  if (labels.dtype !== 'uint8' || labels.dims.length !== 1) {
    throw new ApiError('E_DATA', `${file}: expected uint8 labels of shape N, found ${labels.dtype} ${labels.dims.join('x')}`);
  }
  if (labels.dims[0] !== count) {
    throw new ApiError('E_DATA', `${file} has ${labels.dims[0]} labels but its images file has ${count} images`);
  }
  return { dtype: 'uint8', shape: [], data: labels.data };
}

async function pair(images: string, labels: string, stats?: { mean: number; std: number }) {
  const [im, lb] = await Promise.all([readIdx(images), readIdx(labels)]);
  const s = stats ?? pixelStats(im.data);
  return { fields: { x: imageField(im, images, s), y: labelField(lb, labels, im.dims[0]) }, stats: s };
}

/** Loads a data source into engine fields: `x` normalised images, `y` labels. */
export async function loadTrainingData(source: DataSource): Promise<TrainingData> {
  let files: { train: { images: string; labels: string }; test?: { images: string; labels: string } };
  if (source.kind === 'fashion-mnist') {
    const dir = fashionMnistDir(source.dir);
    files = {
      train: { images: path.join(dir, FASHION_FILES.trainImages), labels: path.join(dir, FASHION_FILES.trainLabels) },
      test: { images: path.join(dir, FASHION_FILES.testImages), labels: path.join(dir, FASHION_FILES.testLabels) },
    };
  } else {
    files = source;
  }
  const train = await pair(files.train.images, files.train.labels);
  // The test set is normalised with the training set's statistics.
  const test = files.test ? await pair(files.test.images, files.test.labels, train.stats) : undefined;
  return {
    train: train.fields,
    test: test?.fields,
    description: source.kind === 'fashion-mnist' ? 'Fashion-MNIST' : files.train.images,
  };
}
