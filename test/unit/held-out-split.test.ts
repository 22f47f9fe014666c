// Issue 41 item 2: an import holds out a test split, drawn by a seed. The draw itself, then the dataset
// service importing real CSV files into two caches (read back from their shards), and every bad input refused
// with the value named.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import type { BuildRequest, CacheManifest } from '../../src-main/api/datasets';
import { BuildRequestSchema, testSetProblem } from '../../src-main/api/datasets';
import { ApiError } from '../../src-main/api/errors';
import { formatIssues } from '../../src-main/api/format-issues';
import type { EngineClient } from '../../src-main/engine/engine-client';
import { datasetsRoot, listDatasets, readManifest, resolveDataset } from '../../src-main/core/datasets/cache-store';
import { DatasetService } from '../../src-main/core/datasets/dataset-service';
import { heldOutCount, heldOutIndices, heldOutPart } from '../../src-main/core/datasets/held-out-split';
import { chooseTestSet } from '../../src-main/cli/test-set';
import type { RecordSource } from '../../src-main/core/datasets/importers/record-source';
import { EventHub } from '../../src-main/core/common/event-hub';
import type { TelemetryService } from '../../src-main/core/telemetry/telemetry-service';
import { openWorkspace, type Workspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

const SPECIES = ['setosa', 'versicolor', 'virginica'];

/** A CSV whose first column is the row's number, so each cached record says which row it came from. */
function rowsCsv(file: string, rows: number, label: (i: number) => string = (i) => SPECIES[i % 3]): string {
  const lines = ['row,a,b,species'];
  for (let i = 0; i < rows; i++) lines.push(`${i},${(i % 7) / 2},${(i % 5) - 2},${label(i)}`);
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

/** A dataset service over a fresh workspace: building caches needs no engine or telemetry. */
async function service(): Promise<{ datasets: DatasetService; ws: Workspace; dir: string }> {
  const t = tempDir('trainbench-split-');
  cleanups.push(t.cleanup);
  const ws = await openWorkspace(t.dir);
  return { datasets: new DatasetService(ws, {} as EngineClient, new EventHub(), {} as TelemetryService), ws, dir: t.dir };
}

/** The values of float32 field `name`'s first column in a cache, record by record, read from its shards. */
function firstColumn(dir: string, manifest: CacheManifest, name: string): number[] {
  const f = manifest.fields.findIndex((x) => x.name === name);
  const field = manifest.fields[f];
  const per = field.recordBytes / 4;
  const out: number[] = [];
  for (const shard of manifest.shards) {
    const bytes = readFileSync(path.join(dir, shard.file));
    const block = new Float32Array(bytes.buffer.slice(bytes.byteOffset + shard.fieldOffsets[f], bytes.byteOffset + shard.fieldOffsets[f] + shard.records * field.recordBytes));
    for (let r = 0; r < shard.records; r++) out.push(block[r * per]);
  }
  return out;
}

async function rowsOf(ws: Workspace, id: string): Promise<{ rows: number[]; manifest: CacheManifest }> {
  const { dir, manifest } = await resolveDataset(ws, id);
  return { rows: firstColumn(dir, manifest, 'x'), manifest };
}

const request = (file: string, name: string, testSplit?: { fraction: number; seed?: number }): BuildRequest =>
  BuildRequestSchema.parse({ source: { kind: 'csv', path: file, label: 'species' }, name, shardBytes: 4096, ...(testSplit ? { testSplit } : {}) });

/** What a call threw: its code and message. */
async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(ApiError);
  return { code: (err as ApiError).code, message: (err as ApiError).message };
}

describe('the held-out draw', () => {
  it('holds out round(fraction x records), spread over the whole source', () => {
    const held = heldOutIndices(1000, { fraction: 0.2, seed: 0 });
    expect(held).toHaveLength(200);
    expect(new Set(held).size).toBe(200);
    expect(held.every((i) => Number.isInteger(i) && i >= 0 && i < 1000)).toBe(true);
    // Not the first or last rows: a file sorted by class gives every class to both parts.
    const firstHalf = held.filter((i) => i < 500).length;
    expect(firstHalf).toBeGreaterThan(70);
    expect(firstHalf).toBeLessThan(130);
    expect(heldOutCount(150, { fraction: 0.2, seed: 0 })).toBe(30);
    expect(heldOutCount(7, { fraction: 0.5, seed: 0 })).toBe(4);
  });

  it('draws the same records for the same seed and other records for another seed', () => {
    const a = heldOutIndices(500, { fraction: 0.3, seed: 42 });
    expect(heldOutIndices(500, { fraction: 0.3, seed: 42 })).toEqual(a);
    const b = heldOutIndices(500, { fraction: 0.3, seed: 43 });
    expect(b).toHaveLength(a.length);
    expect(b).not.toEqual(a);
    // Pinned: a change to the draw (or to the generator it uses) would move every split already imported.
    expect(heldOutIndices(20, { fraction: 0.25, seed: 0 })).toEqual([1, 3, 10, 11, 19]);
    expect(heldOutIndices(20, { fraction: 0.25, seed: 7 })).toEqual([0, 1, 10, 11, 18]);
    // The largest seed is a seed like any other.
    expect(heldOutIndices(500, { fraction: 0.3, seed: 2 ** 32 - 1 })).toHaveLength(150);
  });

  it('keeps the draw across chunk edges: each part of a source read 7 records at a time', async () => {
    const records = 101;
    // Record i holds the number i (uint32) and i % 3 (uint8): two fields, gathered alike.
    const source: RecordSource = {
      kind: 'test',
      description: 'numbers',
      records,
      fields: [
        { name: 'x', dtype: 'uint32', shape: [] },
        { name: 'y', dtype: 'uint8', shape: [] },
      ],
      files: [],
      sourceBytes: records * 5,
      options: {},
      uncachedReason: null,
      rawLayout: () => null,
      async *chunks(maxRecords) {
        for (let at = 0; at < records; at += maxRecords) {
          const n = Math.min(maxRecords, records - at);
          const x = Uint32Array.from({ length: n }, (_, k) => at + k);
          yield { count: n, fields: [new Uint8Array(x.buffer), Uint8Array.from({ length: n }, (_, k) => (at + k) % 3)] };
        }
      },
    };
    const read = async (part: 'train' | 'test') => {
      const p = heldOutPart(source, { fraction: 0.3, seed: 9 }, part);
      const xs: number[] = [];
      const ys: number[] = [];
      for await (const c of p.chunks(7)) {
        expect(c.count).toBeLessThanOrEqual(7);
        xs.push(...new Uint32Array(c.fields[0].slice().buffer));
        ys.push(...c.fields[1]);
      }
      expect(xs).toHaveLength(p.records);
      expect(ys).toEqual(xs.map((v) => v % 3));
      return xs;
    };
    const test = await read('test');
    const train = await read('train');
    expect(test).toEqual(heldOutIndices(records, { fraction: 0.3, seed: 9 }));
    expect([...train, ...test].sort((a, b) => a - b)).toEqual(Array.from({ length: records }, (_, i) => i));
    expect(heldOutPart(source, { fraction: 0.3, seed: 9 }, 'test').rawLayout()).toBeNull();
  });

  it('refuses a fraction outside (0, 0.5], a bad seed, and a split that leaves a part empty, naming the value', () => {
    const message = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        expect(err).toBeInstanceOf(ApiError);
        expect((err as ApiError).code).toBe('E_BAD_INPUT');
        return (err as Error).message;
      }
      throw new Error('not refused');
    };
    expect(message(() => heldOutCount(100, { fraction: 0, seed: 0 }))).toMatch(/^test fraction 0 is not above 0 and at most 0\.5/);
    expect(message(() => heldOutCount(100, { fraction: 0.7, seed: 0 }))).toMatch(/^test fraction 0\.7 is not above 0 and at most 0\.5: .*e\.g\. 0\.2 for 20%$/);
    expect(message(() => heldOutCount(100, { fraction: -0.1, seed: 0 }))).toMatch(/^test fraction -0\.1 /);
    expect(message(() => heldOutCount(100, { fraction: NaN, seed: 0 }))).toMatch(/^test fraction NaN /);
    expect(message(() => heldOutCount(100, { fraction: 0.2, seed: -1 }))).toMatch(/^split seed -1 is not a whole number from 0 to 4294967295$/);
    expect(message(() => heldOutCount(100, { fraction: 0.2, seed: 1.5 }))).toMatch(/^split seed 1\.5 /);
    expect(message(() => heldOutCount(7, { fraction: 0.05, seed: 0 }))).toBe(
      'test fraction 0.05 of 7 records holds out 0, which leaves no test set: use a fraction of at least 0.072 here, or more rows',
    );
    expect(heldOutCount(7, { fraction: 0.072, seed: 0 })).toBe(1);
    expect(message(() => heldOutCount(1, { fraction: 0.5, seed: 0 }))).toMatch(/holds out 1, which leaves no training set: a split needs at least 2 records$/);
  });

  it('is refused by the contract with the value named, before anything is read', () => {
    const parsed = BuildRequestSchema.safeParse({ source: { kind: 'csv', path: 'x.csv', label: 'y' }, name: 'x', testSplit: { fraction: 0.75 } });
    expect(parsed.success).toBe(false);
    expect(formatIssues(parsed.error!, 'params')).toMatch(/^params\.testSplit\.fraction: test fraction 0\.75 is not above 0 and at most 0\.5/);
    const seed = BuildRequestSchema.safeParse({ source: { kind: 'csv', path: 'x.csv', label: 'y' }, name: 'x', testSplit: { fraction: 0.2, seed: -3 } });
    expect(formatIssues(seed.error!, 'params')).toBe('params.testSplit.seed: split seed -3 is not a whole number from 0 to 4294967295');
    expect(BuildRequestSchema.parse({ source: { kind: 'csv', path: 'x.csv', label: 'y' }, name: 'x', testSplit: { fraction: 0.5 } }).testSplit).toEqual({ fraction: 0.5, seed: 0 });
  });
});

describe('importing a CSV with a held-out test split', () => {
  it('writes <name> and <name>-test: sizes, disjoint, together every row, each naming the other', async () => {
    const { datasets, ws, dir } = await service();
    const csv = rowsCsv(path.join(dir, 'sources', 'flowers.csv'), 1000);
    const r = await datasets.build(request(csv, 'flowers', { fraction: 0.2, seed: 7 }));

    expect(r.dataset.name).toBe('flowers');
    expect(r.test?.dataset.name).toBe('flowers-test');
    expect(r.dataset.records).toBe(800);
    expect(r.test?.dataset.records).toBe(200);
    expect(r.dir).toBe(`datasets/${r.dataset.id}`);
    expect(r.test?.dir).toBe(`datasets/${r.test?.dataset.id}`);
    expect(r.dataset.split).toEqual({ part: 'train', fraction: 0.2, seed: 7, sourceRecords: 1000, other: r.test?.dataset.id });
    expect(r.test?.dataset.split).toEqual({ part: 'test', fraction: 0.2, seed: 7, sourceRecords: 1000, other: r.dataset.id });

    const train = await rowsOf(ws, 'flowers');
    const test = await rowsOf(ws, 'flowers-test');
    expect(train.manifest.records).toBe(800);
    expect(test.manifest.records).toBe(200);
    // Several shards (4 KiB shards): the parts are written across shard edges.
    expect(train.manifest.shards.length).toBeGreaterThan(2);
    expect(train.rows.filter((i) => test.rows.includes(i))).toEqual([]);
    expect([...train.rows, ...test.rows].sort((a, b) => a - b)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    // The held-out rows are the draw's, each part in file order.
    expect(test.rows).toEqual(heldOutIndices(1000, { fraction: 0.2, seed: 7 }));
    expect(train.rows).toEqual([...train.rows].sort((a, b) => a - b));
    // Both parts carry the whole file's classes, so index i is the same species in each.
    expect(test.manifest.fields[1].classes).toEqual(SPECIES);
    expect(train.manifest.fields[1].classes).toEqual(SPECIES);
    expect(train.manifest.source.description).toContain('the training part, 20% held out as the test set, seed 7');
    expect(test.manifest.source.description).toContain('the 20% held out as the test set, seed 7');
    // The list shows which is whose.
    const listed = await listDatasets(ws);
    expect(listed.find((d) => d.name === 'flowers')?.split?.other).toBe(r.test?.dataset.id);
    expect(listed.find((d) => d.name === 'flowers-test')?.split?.part).toBe('test');
  });

  it('draws the same rows again with the same seed (a fresh workspace), other rows with another seed', async () => {
    const one = await service();
    const two = await service();
    const csvOne = rowsCsv(path.join(one.dir, 'sources', 'flowers.csv'), 120);
    const csvTwo = rowsCsv(path.join(two.dir, 'sources', 'flowers.csv'), 120);
    await one.datasets.build(request(csvOne, 'flowers', { fraction: 0.25, seed: 3 }));
    await two.datasets.build(request(csvTwo, 'flowers', { fraction: 0.25, seed: 3 }));
    const first = (await rowsOf(one.ws, 'flowers-test')).rows;
    expect(first).toHaveLength(30);
    expect((await rowsOf(two.ws, 'flowers-test')).rows).toEqual(first);

    // Importing again with the same settings is a cache hit for both parts.
    const again = await one.datasets.build(request(csvOne, 'flowers', { fraction: 0.25, seed: 3 }));
    expect(again.hit).toBe(true);
    expect(again.test?.hit).toBe(true);

    // Another seed replaces both parts (a name means one cache) with another draw.
    const other = await one.datasets.build(request(csvOne, 'flowers', { fraction: 0.25, seed: 4 }));
    expect(other.hit).toBe(false);
    const redrawn = (await rowsOf(one.ws, 'flowers-test')).rows;
    expect(redrawn).toHaveLength(30);
    expect(redrawn).not.toEqual(first);
    expect((await listDatasets(one.ws)).map((d) => d.name).sort()).toEqual(['flowers', 'flowers-test']);
  });

  it('reports one progress bar over both parts, ending once', async () => {
    const { datasets, dir } = await service();
    const csv = rowsCsv(path.join(dir, 'sources', 'flowers.csv'), 200);
    const seen: { phase: string; records: number; recordsTotal: number }[] = [];
    await datasets.build(request(csv, 'flowers', { fraction: 0.1 }), {}, (p) => seen.push(p));
    expect(seen.every((p) => p.recordsTotal === 200)).toBe(true);
    expect(seen.filter((p) => p.phase === 'done')).toHaveLength(1);
    expect(seen[seen.length - 1]).toMatchObject({ phase: 'done', records: 200 });
    const records = seen.map((p) => p.records);
    expect(records).toEqual([...records].sort((a, b) => a - b));
  });

  it('refuses a bad fraction before writing anything, naming it', async () => {
    const { datasets, ws, dir } = await service();
    const csv = rowsCsv(path.join(dir, 'sources', 'flowers.csv'), 10);
    // The service is also called without the contract (the CLI): it checks for itself.
    const bad = (fraction: number) => ({ ...request(csv, 'flowers'), testSplit: { fraction, seed: 0 } });
    expect(await refusal(datasets.build(bad(0.6)))).toEqual({ code: 'E_BAD_INPUT', message: expect.stringMatching(/^test fraction 0\.6 is not above 0 and at most 0\.5/) });
    expect(await refusal(datasets.build(bad(0)))).toEqual({ code: 'E_BAD_INPUT', message: expect.stringMatching(/^test fraction 0 is not/) });
    expect((await refusal(datasets.build(bad(0.01)))).message).toBe(
      'test fraction 0.01 of 10 records holds out 0, which leaves no test set: use a fraction of at least 0.05 here, or more rows',
    );
    expect(await listDatasets(ws)).toEqual([]);
  });

  it('leaves a dataset of the user\u2019s own named <name>-test alone, and says so', async () => {
    const { datasets, ws, dir } = await service();
    const own = rowsCsv(path.join(dir, 'sources', 'own.csv'), 12);
    const csv = rowsCsv(path.join(dir, 'sources', 'flowers.csv'), 40);
    const mine = await datasets.build(request(own, 'flowers-test'));
    const { message } = await refusal(datasets.build(request(csv, 'flowers', { fraction: 0.2 })));
    expect(message).toBe(
      `a dataset named flowers-test (${mine.dataset.id}) is in the workspace and is not a held-out split: the test split of flowers would replace it; import under another name, or remove it first ("trainbench cache rm ${mine.dataset.id}")`,
    );
    expect((await listDatasets(ws)).map((d) => d.id)).toEqual([mine.dataset.id]);
  });

  it('importing the name again without a split removes the old held-out part (its rows are now trained on)', async () => {
    const { datasets, ws, dir } = await service();
    const csv = rowsCsv(path.join(dir, 'sources', 'flowers.csv'), 40);
    await datasets.build(request(csv, 'flowers', { fraction: 0.2 }));
    const whole = await datasets.build(request(csv, 'flowers'));
    expect(whole.test).toBeUndefined();
    expect(whole.dataset.split).toBeUndefined();
    expect(whole.dataset.records).toBe(40);
    expect((await listDatasets(ws)).map((d) => d.name)).toEqual(['flowers']);
    const manifest = await readManifest(ws, path.join(datasetsRoot(ws), whole.dataset.id));
    expect(manifest.split).toBeUndefined();
  });
});

describe('which datasets can be a test set', () => {
  const fields = (width: number, classes?: string[]) => [
    { name: 'x', dtype: 'float32' as const, shape: [width] },
    { name: 'y', dtype: 'int32' as const, shape: [], ...(classes ? { classes } : {}) },
  ];

  it('takes one stored like the training set and refuses others, naming the field and both values', () => {
    expect(testSetProblem({ name: 'flowers', fields: fields(3, SPECIES) }, { name: 'flowers-test', fields: fields(3, SPECIES) })).toBeNull();
    expect(testSetProblem({ name: 'flowers', fields: fields(3) }, { name: 'wide', fields: fields(5) })).toBe(
      "test set wide stores 'x' as float32, shape 5, but flowers as float32, shape 3: import both the same way",
    );
    expect(testSetProblem({ name: 'flowers', fields: fields(3, SPECIES) }, { name: 'two', fields: fields(3, ['setosa', 'virginica']) })).toBe(
      "test set two labels 'y' with 2 text classes (setosa, virginica) but flowers with 3 text classes (setosa, versicolor, virginica): the same index would mean another class; hold out a test split when importing instead",
    );
    expect(testSetProblem({ name: 'flowers', fields: fields(3) }, { name: 'bare', fields: fields(3).slice(0, 1) })).toBe(
      "test set bare has no field 'y' (it has: x), which flowers trains on",
    );
  });

  it('is checked when a run is given one, before the engine sees it', async () => {
    const { datasets, dir } = await service();
    await datasets.build(request(rowsCsv(path.join(dir, 'sources', 'flowers.csv'), 30), 'flowers'));
    await datasets.build(request(rowsCsv(path.join(dir, 'sources', 'two.csv'), 30, (i) => SPECIES[i % 2]), 'two'));
    const { code, message } = await refusal(datasets.trainingData({ kind: 'dataset', train: 'flowers', test: 'two' }, {}));
    expect(code).toBe('E_BAD_INPUT');
    expect(message).toMatch(/^test set two labels 'y' with 2 text classes/);
  });
});

describe("a tampered manifest's name (the re-attack: F1 gaps)", () => {
  // eslint-disable-next-line no-control-regex -- control characters are what it finds
  const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
  const PLANTED = 'flowers\u202eexe.txt\u2028next\x1b[2K';
  const SHOWN = 'flowers\\u202eexe.txt\\u2028next\\x1b[2K';

  /** An import with a held-out split whose training part's manifest.json names it PLANTED. */
  async function planted() {
    const s = await service();
    const built = await s.datasets.build(request(rowsCsv(path.join(s.dir, 'sources', 'flowers.csv'), 100), 'flowers', { fraction: 0.2 }));
    const file = path.join(s.dir, 'datasets', built.dataset.id, 'manifest.json');
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as CacheManifest;
    writeFileSync(file, JSON.stringify({ ...manifest, name: PLANTED, source: { ...manifest.source, description: `${PLANTED} source` } }));
    return { ...s, built };
  }

  it('is listed escaped by datasets.list, which the CLI and the Datasets page show', async () => {
    const { ws, built } = await planted();
    const listed = (await listDatasets(ws)).find((d) => d.id === built.dataset.id);
    expect(listed).toMatchObject({ name: SHOWN, sourceDescription: `${SHOWN} source`, problem: null });
  });

  it("is named escaped in train's test-set note, with its test part there or gone", async () => {
    const { datasets, dir, built } = await planted();
    const { note } = await chooseTestSet({ kind: 'dataset', train: built.dataset.id }, undefined, dir);
    expect(note).not.toMatch(UNSHOWABLE);
    expect(note).toContain(`of the rows of ${SHOWN} held out when it was imported`);
    await datasets.remove(built.test!.dataset.id);
    const gone = await chooseTestSet({ kind: 'dataset', train: built.dataset.id }, undefined, dir);
    expect(gone.note).not.toMatch(UNSHOWABLE);
    expect(gone.note).toContain(`the split held out of ${SHOWN} when it was imported`);
  });
});
