// A dataset name means one cache in a workspace, and every method takes a name or an id.
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import type { BuildResult, DatasetSummary } from '../../src-main/api/datasets';
import { datasetsRoot } from '../../src-main/core/datasets/cache-store';
import type { Services } from '../../src-main/core/services';
import { cacheOf } from '../helpers/datasets';
import { testServices } from '../helpers/services';

let services: Services;
let cleanup: () => Promise<void>;
beforeAll(async () => ({ services, cleanup } = await testServices()));
afterAll(async () => cleanup?.());

const build = (name: string, seed: number) =>
  services.router.dispatch('datasets.build', { source: { kind: 'synthetic-board', records: 8, seed }, name }) as Promise<BuildResult>;
const list = () => services.router.dispatch('datasets.list', {}) as Promise<DatasetSummary[]>;
const onDisk = () => readdirSync(datasetsRoot(services.workspace)).sort();
// Each test starts from an empty datasets/ folder, whatever the one before left.
beforeEach(() => {
  for (const name of onDisk()) rmSync(path.join(datasetsRoot(services.workspace), name), { recursive: true });
});

describe('dataset names', () => {
  it('a rebuild under a name from another source replaces the cache of that name; the same source is a hit', async () => {
    const first = await build('board', 1);
    const cousin = await build('board-2', 1); // a name that starts like it is another dataset
    const second = await build('board', 2);
    expect(second.hit).toBe(false);
    expect(second.dataset.id).not.toBe(first.dataset.id);
    const expected = [cousin.dataset.id, second.dataset.id].sort();
    expect((await list()).map((d) => d.id).sort()).toEqual(expected);
    expect(onDisk()).toEqual(expected); // the old one is gone, and no scratch folder is left
    const again = await build('board', 2);
    expect(again).toMatchObject({ hit: true, dataset: { id: second.dataset.id } });
    expect(onDisk()).toEqual(expected);
  });

  it('verify, benchmark, training data and remove take the name or the id', async () => {
    const { dataset } = await build('board', 5);
    for (const key of ['board', dataset.id]) {
      expect(await services.router.dispatch('datasets.verify', { id: key })).toMatchObject({ id: dataset.id, ok: true });
      const data = await services.datasets.trainingData({ kind: 'dataset', train: key, test: key }, {});
      expect(data.train.dir).toBe(path.join(datasetsRoot(services.workspace), dataset.id));
    }
    const bench = await services.router.dispatch('datasets.benchmark', { dataset: 'board', batchSize: 4, workers: [0], prefetch: [1], maxSeconds: 0.05, uncached: false });
    expect(bench).toMatchObject({ dataset: dataset.id });
    expect(await services.router.dispatch('datasets.remove', { id: 'board' })).toEqual({ removed: dataset.id });
    expect(await list()).toEqual([]);
  });

  it('an unknown name says "no dataset named" and lists what exists, everywhere', async () => {
    await build('known', 7);
    const unknown = expect.objectContaining({ code: 'E_BAD_INPUT', message: expect.stringMatching(/^no dataset named "nope" in this workspace \(it has: known\)$/) });
    await expect(services.router.dispatch('datasets.verify', { id: 'nope' })).rejects.toEqual(unknown);
    await expect(services.router.dispatch('datasets.remove', { id: 'nope' })).rejects.toEqual(unknown);
    await expect(services.router.dispatch('datasets.benchmark', { dataset: 'nope', maxSeconds: 0.05 })).rejects.toEqual(unknown);
    await expect(services.datasets.trainingData({ kind: 'dataset', train: 'nope' }, {})).rejects.toEqual(unknown);
    for (const d of await list()) await services.router.dispatch('datasets.remove', { id: d.id });
    await expect(services.router.dispatch('datasets.verify', { id: 'nope' })).rejects.toMatchObject({ message: expect.stringContaining('it has none yet') });
  });

  it('a workspace from an older version with two caches of one name: the newest is meant, and the next build of the name leaves one', async () => {
    // Older versions let a name be reused; recreate that by building one while the other is set aside.
    const older = await build('legacy', 3);
    const aside = path.join(services.workspace.root, 'aside');
    const olderDir = path.join(datasetsRoot(services.workspace), older.dataset.id);
    renameSync(olderDir, aside);
    const newer = await build('legacy', 4);
    renameSync(aside, olderDir);
    const stamp = (id: string, createdAt: string) => {
      const file = path.join(datasetsRoot(services.workspace), id, 'manifest.json');
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), createdAt }));
    };
    stamp(older.dataset.id, '2024-01-01T00:00:00.000Z');
    stamp(newer.dataset.id, '2024-06-01T00:00:00.000Z');

    expect((await list()).map((d) => [d.name, d.id])).toEqual(expect.arrayContaining([['legacy', older.dataset.id], ['legacy', newer.dataset.id]]));
    expect(await services.router.dispatch('datasets.verify', { id: 'legacy' })).toMatchObject({ id: newer.dataset.id, ok: true });
    expect((await services.datasets.trainingData({ kind: 'dataset', train: 'legacy' }, {})).train.dir).toContain(newer.dataset.id);

    // Building the older source again is a hit, and now the name means it alone.
    expect(await build('legacy', 3)).toMatchObject({ hit: true, dataset: { id: older.dataset.id } });
    expect((await list()).map((d) => d.id)).toEqual([older.dataset.id]);
    expect(await services.router.dispatch('datasets.verify', { id: 'legacy' })).toMatchObject({ id: older.dataset.id });
  });

  it('a name that is not one plain folder name is refused by the builder itself (the CLI calls it without the contract)', async () => {
    for (const name of ['../escape', '.hidden', 'a/b', '']) {
      await expect(cacheOf(services.workspace, { kind: 'synthetic-board', records: 4, seed: 0 }, name), name).rejects.toMatchObject({
        code: 'E_BAD_INPUT',
        message: expect.stringContaining(`dataset name ${JSON.stringify(name)} is not allowed`),
      });
    }
    expect(onDisk()).toEqual([]);
    expect(readdirSync(services.workspace.root).sort()).toEqual(['datasets', 'reports', 'runs', 'sources', 'workspace.json']);
  });
});

describe('field names', () => {
  it('a field map that renames a field to a path or an empty name is refused, and leaves nothing behind', async () => {
    const source = { kind: 'synthetic-board', records: 8, seed: 3 } as const;
    for (const to of ['../../x', '', '__proto__ x']) {
      await expect(services.router.dispatch('datasets.build', { source, name: 'mapped', fieldMap: [{ from: 'x', to, dtype: 'uint8' }] })).rejects.toMatchObject({ code: 'E_BAD_REQUEST' });
      // The CLI calls the service without the contract: the builder refuses it too.
      await expect(services.datasets.build({ source, name: 'mapped', shardBytes: 1 << 20, fieldMap: [{ from: 'x', to, dtype: 'uint8' }] })).rejects.toMatchObject({
        code: 'E_BAD_INPUT',
        message: expect.stringContaining('is not allowed'),
      });
    }
    expect(onDisk()).toEqual([]);
  });
});
