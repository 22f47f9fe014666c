import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

import { afterAll, describe, expect, it } from 'vitest';

import { parseIdx, readIdx } from '../../src-main/engine/data/idx-reader';
import { DEBIAN_FASHION_MNIST_DIR, fashionMnistDir, loadTrainingData } from '../../src-main/engine/data/training-data';
import { tempDir } from '../helpers/temp-dir';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** A valid IDX file: 3 images of 2x2 uint8. */
function idx(dims: number[], values: number[], type = 0x08): Buffer {
  const header = Buffer.alloc(4 + 4 * dims.length);
  header[2] = type;
  header[3] = dims.length;
  dims.forEach((d, i) => header.writeUInt32BE(d, 4 + 4 * i));
  return Buffer.concat([header, Buffer.from(values)]);
}

function file(name: string, bytes: Buffer): string {
  const p = path.join(tmp.dir, name);
  writeFileSync(p, bytes);
  return p;
}

describe('IDX reader', () => {
  it('reads raw and gzip files alike', async () => {
    const raw = idx([3, 2, 2], [...Array(12).keys()]);
    for (const p of [file('a.idx', raw), file('a.idx.gz', gzipSync(raw))]) {
      const a = await readIdx(p);
      expect(a.dims).toEqual([3, 2, 2]);
      expect(a.dtype).toBe('uint8');
      expect(Array.from(a.data)).toEqual([...Array(12).keys()]);
    }
  });

  it('reads the real Fashion-MNIST files from Debian', async () => {
    const labels = await readIdx(path.join(DEBIAN_FASHION_MNIST_DIR, 't10k-labels-idx1-ubyte.gz'));
    expect(labels.dims).toEqual([10000]);
    expect(Math.max(...labels.data)).toBe(9);
  });

  it('refuses a truncated gzip stream', async () => {
    const gz = gzipSync(idx([3, 2, 2], [...Array(12).keys()]));
    const p = file('cut.gz', gz.subarray(0, gz.length - 10));
    await expect(readIdx(p)).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringContaining('not a valid gzip stream') });
  });

  it('refuses wrong magic bytes, showing them', () => {
    const bytes = idx([1], [1]);
    bytes[0] = 0x50;
    expect(() => parseIdx(bytes, 'x.idx')).toThrowError(/x\.idx: is not an IDX file: magic bytes are 50 00 08 01/);
  });

  it('refuses data shorter than the header promises', () => {
    expect(() => parseIdx(idx([3, 2, 2], [1, 2, 3]), 'short.idx')).toThrowError(
      /short\.idx: is truncated: the header promises 3x2x2 uint8 values \(12 bytes\) but the file holds 3/,
    );
  });

  it('refuses trailing bytes, an unknown type, too many dimensions and huge claims', () => {
    expect(() => parseIdx(idx([2], [1, 2, 3]), 'long.idx')).toThrowError(/1 bytes after/);
    expect(() => parseIdx(idx([1], [1], 0x07), 't.idx')).toThrowError(/unknown IDX element type 0x7/);
    expect(() => parseIdx(idx([1, 1, 1, 1, 1], [1]), 'd.idx')).toThrowError(/5 dimensions/);
    expect(() => parseIdx(idx([65536, 65536], []), 'big.idx')).toThrowError(/more than 2147483648 bytes/);
    expect(() => parseIdx(Buffer.from([0, 0]), 'tiny.idx')).toThrowError(/truncated: 2 bytes/);
  });

  it('refuses labels that do not match the images', async () => {
    const images = file('im.idx', idx([3, 2, 2], Array(12).fill(1)));
    const labels = file('lb.idx', idx([2], [0, 1]));
    await expect(loadTrainingData({ kind: 'idx', train: { images, labels } })).rejects.toMatchObject({
      code: 'E_DATA',
      message: expect.stringContaining('has 2 labels but its images file has 3 images'),
    });
  });

  it('says where it looked when Fashion-MNIST is missing', () => {
    expect(() => fashionMnistDir(tmp.dir)).toThrowError(/Fashion-MNIST not found in .*dataset-fashion-mnist/);
  });

  it('normalises images with the training set statistics', async () => {
    const images = file('n.idx', idx([2, 1, 2], [0, 255, 0, 255]));
    const labels = file('nl.idx', idx([2], [0, 1]));
    const data = await loadTrainingData({ kind: 'idx', train: { images, labels } });
    const x = data.train.x;
    // mean 0.5, std 0.5: 0 -> -1, 255 -> 1
    expect(0 * x.scale! + x.offset!).toBeCloseTo(-1, 6);
    expect(255 * x.scale! + x.offset!).toBeCloseTo(1, 6);
    expect(readFileSync(images).length).toBe(4 + 12 + 4);
  });
});
