// Nothing that arrives through the contract (serve mode answers any page with the token) reaches
// outside the workspace: not by '..', not by an absolute path, not through a link inside sources/.
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { datasetsRoot, verifyDataset } from '../../src-main/core/datasets/cache-store';
import type { Services } from '../../src-main/core/services';
import { npyBytes } from '../helpers/numpy';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

let services: Services;
let cleanup: () => Promise<void>;
const outside = tempDir('trainbench-outside-');
const FASHION_FILES = ['train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz', 't10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'];
const THROUGH_LINK = expect.objectContaining({ code: 'E_BAD_INPUT', message: expect.stringContaining('leads outside the workspace through a link') });

beforeAll(async () => {
  ({ services, cleanup } = await testServices());
  // Outside: a valid .npy, a folder of IDX-named files, and a "cache" whose manifest holds a secret.
  const values = new Float32Array(64 * 4).map((_, i) => i);
  writeFileSync(path.join(outside.dir, 'data.npy'), npyBytes('<f4', [64, 4], new Uint8Array(values.buffer)));
  mkdirSync(path.join(outside.dir, 'somewhere', 'leak'), { recursive: true });
  writeFileSync(path.join(outside.dir, 'somewhere', 'leak', 'manifest.json'), 'SECRET-BYTES not json');
  const sources = path.join(services.workspace.root, 'sources');
  symlinkSync(outside.dir, path.join(sources, 'etc'));
  symlinkSync(path.join(outside.dir, 'data.npy'), path.join(sources, 'linked.npy'));
  // A real folder inside whose Fashion-MNIST files are each a link to a file outside.
  mkdirSync(path.join(sources, 'fm'));
  for (const f of FASHION_FILES) {
    writeFileSync(path.join(outside.dir, f), 'not idx');
    symlinkSync(path.join(outside.dir, f), path.join(sources, 'fm', f));
  }
});
afterAll(async () => {
  await cleanup?.();
  outside.cleanup();
});

describe('a link inside sources/ that points outside the workspace', () => {
  it('cannot be listed, and is not offered in its folder', async () => {
    await expect(services.router.dispatch('files.list', { dir: 'sources/etc' })).rejects.toEqual(THROUGH_LINK);
    const listed = (await services.router.dispatch('files.list', { dir: 'sources' })) as { entries: { name: string }[] };
    expect(listed.entries.map((e) => e.name)).not.toContain('etc');
    expect(listed.entries.map((e) => e.name)).not.toContain('linked.npy');
  });

  it('cannot be inspected or built from, by folder link or by file link', async () => {
    for (const p of ['sources/etc/data.npy', 'sources/linked.npy']) {
      await expect(services.router.dispatch('datasets.inspect', { source: { kind: 'npy', path: p } }), p).rejects.toEqual(THROUGH_LINK);
      await expect(services.router.dispatch('datasets.build', { source: { kind: 'npy', path: p }, name: 'leaked' }), p).rejects.toEqual(THROUGH_LINK);
    }
    expect(readdirSync(datasetsRoot(services.workspace))).toEqual([]);
  });

  it('cannot be trained from: fashion-mnist dir and IDX paths', async () => {
    const spec = { family: 'mlp', input: [1, 28, 28], outputs: 10 };
    for (const dir of ['sources/etc', 'sources/fm']) {
      await expect(services.router.dispatch('train.run', { spec, data: { kind: 'fashion-mnist', dir } }), dir).rejects.toEqual(THROUGH_LINK);
    }
    const pair = { images: 'sources/etc/train-images-idx3-ubyte.gz', labels: 'sources/etc/train-labels-idx1-ubyte.gz' };
    await expect(services.router.dispatch('train.run', { spec, data: { kind: 'idx', train: pair } })).rejects.toEqual(THROUGH_LINK);
  });

  it('the CLI may still read it, as the user pointed it there', async () => {
    const inspected = await services.datasets.inspect({ kind: 'npy', path: path.join(services.workspace.root, 'sources', 'linked.npy'), field: 'x' }, { allowPathsOutsideWorkspace: true });
    expect(inspected.records).toBe(64);
  });
});

describe('ids that try to leave datasets/', () => {
  it('the contract refuses "../../somewhere/leak"', async () => {
    await expect(services.router.dispatch('datasets.verify', { id: '../../somewhere/leak' })).rejects.toMatchObject({ code: 'E_BAD_REQUEST' });
  });

  it('the services refuse it too when called directly, before reading any file', async () => {
    // datasets/ is two levels below the workspace's parent; aim at the outside folder's fake cache.
    const id = path.relative(datasetsRoot(services.workspace), path.join(outside.dir, 'somewhere', 'leak'));
    expect(id.startsWith('..')).toBe(true);
    for (const attempt of [() => services.datasets.verify(id), () => verifyDataset(services.workspace, id), () => services.datasets.remove(id)]) {
      const err = await attempt().then(
        (r) => r,
        (e: Error) => e,
      );
      expect(err).toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringContaining('is not a dataset id or name') });
      expect(JSON.stringify(err)).not.toContain('SECRET');
      expect((err as Error).message).not.toContain('SECRET');
    }
  });
});
