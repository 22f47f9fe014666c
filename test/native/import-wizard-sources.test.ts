// What the import wizard asks the main process for: a CSV's header before its label is chosen (bounded,
// confined to the workspace), and several .npy files paired into named fields, as the CLI pairs them.
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { CsvHeader, InspectResult, LoaderBenchResult } from '../../src-main/api/datasets';
import { sourceFromArgs } from '../../src-main/cli/cache-command';
import type { Services } from '../../src-main/core/services';
import { npyBytes } from '../helpers/numpy';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

let services: Services;
let cleanup: () => Promise<void>;
const outside = tempDir('trainbench-outside-');
beforeAll(async () => {
  ({ services, cleanup } = await testServices());
  mkdirSync(path.join(services.workspace.root, 'sources'), { recursive: true });
});
afterAll(async () => {
  await cleanup?.();
  outside.cleanup();
});

const source = (name: string, bytes: Uint8Array | string) => writeFileSync(path.join(services.workspace.root, 'sources', name), bytes);
const header = (p: string) => services.router.dispatch('datasets.csvHeader', { path: p }) as Promise<CsvHeader>;

describe('datasets.csvHeader', () => {
  it('offers the header columns and the likely label: a label/target/y/class column, else the last', async () => {
    source('iris.csv', 'sepal_length,sepal_width,species\n5.1,3.5,setosa\n');
    source('house.csv', 'rooms,Target,area\n3,250000,90\n');
    expect(await header('sources/iris.csv')).toEqual({ path: 'sources/iris.csv', columns: ['sepal_length', 'sepal_width', 'species'], suggestedLabel: 'species' });
    expect((await header('sources/house.csv')).suggestedLabel).toBe('Target');
  });

  it('reads only the first line: a huge file answers at once', async () => {
    const big = Buffer.alloc(16 << 20, '1,2,3\n');
    big.write('a,b,label\n', 0);
    source('big.csv', big);
    const started = Date.now();
    expect((await header('sources/big.csv')).columns).toEqual(['a', 'b', 'label']);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('names the file when it is binary, has no header, is empty or has no line end within 1 MiB', async () => {
    source('image.csv', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x0a, 0x1a, 0x0a]));
    source('numbers.csv', '5.1,3.5,0\n4.9,3.0,1\n');
    source('empty.csv', '\n\n');
    source('blob.csv', Buffer.alloc(3 << 20, 0x41));
    source('one.csv', 'a;b;c\n1;2;3\n');
    const refused = (file: string, message: RegExp) => expect(header(`sources/${file}`)).rejects.toMatchObject({ code: 'E_DATA', message: expect.stringMatching(message) });
    await refused('image.csv', /image\.csv is not a text CSV file: its first line holds/);
    await refused('numbers.csv', /numbers\.csv has no header row: its first line \(5\.1, 3\.5, 0\) is numbers/);
    await refused('empty.csv', /empty\.csv is empty: a CSV needs a header row/);
    await refused('blob.csv', /blob\.csv line 1 is longer than 1 MiB/);
    await refused('one.csv', /one\.csv has one column \(a;b;c\): .*separated by commas/);
  });

  it('keeps to the workspace: no path outside, no link leading out, no folder or pipe', async () => {
    writeFileSync(path.join(outside.dir, 'secret.csv'), 'a,b\n1,2\n');
    symlinkSync(path.join(outside.dir, 'secret.csv'), path.join(services.workspace.root, 'sources', 'linked.csv'));
    await expect(header(path.join(outside.dir, 'secret.csv'))).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringContaining('outside the workspace') });
    await expect(header('sources/linked.csv')).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringContaining('leads outside the workspace through a link') });
    await expect(header('sources')).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringMatching(/cannot read .*sources: it is a directory, not a file; choose a file inside it$/) });
    execFileSync('mkfifo', [path.join(services.workspace.root, 'sources', 'pipe.csv')]);
    await expect(header('sources/pipe.csv')).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringMatching(/pipe\.csv is not a regular file/) });
    await expect(header('sources/missing.csv')).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringMatching(/cannot read .*missing\.csv: it does not exist; check the path$/) });
  });

  it('the label the header suggested builds', async () => {
    const h = await header('sources/iris.csv');
    const r = (await services.router.dispatch('datasets.inspect', { source: { kind: 'csv', path: h.path, label: h.suggestedLabel } })) as InspectResult;
    expect(r.fields.map((f) => f.name)).toEqual(['x', 'y']);
  });
});

describe('several .npy files as named fields (npy-fields)', () => {
  const features = new Float32Array(500 * 4).map((_, i) => i);
  const labels = new BigInt64Array(500).map((_, i) => BigInt(i % 3));

  it('pairs features and labels into one dataset, readable in place', async () => {
    source('feat.npy', npyBytes('<f4', [500, 4], new Uint8Array(features.buffer)));
    source('lab.npy', npyBytes('<i8', [500], new Uint8Array(labels.buffer)));
    const spec = { kind: 'npy-fields', files: [{ path: 'sources/feat.npy', field: 'x' }, { path: 'sources/lab.npy', field: 'y' }] };
    const r = (await services.router.dispatch('datasets.inspect', { source: spec })) as InspectResult;
    expect(r).toMatchObject({ records: 500, uncached: { available: true } });
    expect(r.fields.map((f) => [f.name, f.dtype, f.shape])).toEqual([['x', 'float32', [4]], ['y', 'int64', []]]);
    expect(r.preview[2]).toEqual({ x: [8, 9, 10, 11], y: [2] });
    await services.router.dispatch('datasets.build', { source: spec, name: 'paired' });
    const bench = (await services.router.dispatch('datasets.benchmark', { dataset: 'paired', batchSize: 50, workers: [0], prefetch: [2], maxSeconds: 0.2 })) as LoaderBenchResult;
    expect(bench.uncachedReason).toBeNull();
  });

  it('names both files when their record counts differ', async () => {
    source('lab-short.npy', npyBytes('<i8', [499], new Uint8Array(labels.buffer, 0, 499 * 8)));
    const spec = { kind: 'npy-fields', files: [{ path: 'sources/feat.npy', field: 'x' }, { path: 'sources/lab-short.npy', field: 'y' }] };
    await expect(services.router.dispatch('datasets.inspect', { source: spec })).rejects.toMatchObject({
      code: 'E_DATA',
      message: expect.stringMatching(/mismatched field lengths: .*feat\.npy has 500 records but .*lab-short\.npy has 499/),
    });
  });

  it('keeps each file inside the workspace', async () => {
    writeFileSync(path.join(outside.dir, 'y.npy'), npyBytes('<i8', [500], new Uint8Array(labels.buffer)));
    const spec = { kind: 'npy-fields', files: [{ path: 'sources/feat.npy', field: 'x' }, { path: path.join(outside.dir, 'y.npy'), field: 'y' }] };
    await expect(services.router.dispatch('datasets.inspect', { source: spec })).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringContaining('outside the workspace') });
  });

  it('is what the CLI makes of file.npy:field pairs', () => {
    expect(sourceFromArgs(['feat.npy:x', 'lab.npy:y'], {})).toEqual({ kind: 'npy-fields', files: [{ path: 'feat.npy', field: 'x' }, { path: 'lab.npy', field: 'y' }] });
    expect(sourceFromArgs(['feat.npy:x'], {})).toEqual({ kind: 'npy', path: 'feat.npy', field: 'x' });
    expect(() => sourceFromArgs(['feat.npy:x', 'lab.npy'], {})).toThrow(/lab\.npy: name each \.npy file's field when several are read side by side/);
  });
});
