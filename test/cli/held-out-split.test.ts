// Issue 41 item 2 on the command line: `cache build --test-fraction` holds out a test split, `train --data
// dataset:<name>` tests on it by default (`--test none` / `--test <dataset>` choose), and every bad value is
// refused with the value named.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { BuildResult } from '../../src-main/api/datasets';
import { isEngineTrainRun, TrainRunResultSchema } from '../../src-main/api/train-result';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const tmp = tempDir();
const ws = path.join(tmp.dir, 'ws');
const SPECIES = ['setosa', 'versicolor', 'virginica'];

/** 300 flowers of three species apart enough to learn, sorted by species. */
function writeFlowers(file: string, classes = SPECIES): string {
  const lines = ['a,b,c,d,species'];
  classes.forEach((name, k) => {
    for (let i = 0; i < 100; i++) {
      const wobble = (j: number) => (((i * 37 + j * 11) % 17) - 8) / 6;
      lines.push(`${[0, 1, 2, 3].map((j) => (k * 2 + wobble(j)).toFixed(2)).join(',')},${name}`);
    }
  });
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

const cli = (...args: string[]) => run(process.execPath, [CLI, ...args], { maxBuffer: 64 * 1024 * 1024 });

/** A command that must fail: its stderr (the exit code is checked to be 1). */
async function refused(...args: string[]): Promise<string> {
  const err = (await cli(...args).then(
    () => null,
    (e: unknown) => e,
  )) as { code?: number; stderr?: string } | null;
  expect(err, `${args.join(' ')} succeeded`).not.toBeNull();
  expect(err!.code).toBe(1);
  return err!.stderr ?? '';
}

async function train(...args: string[]) {
  const { stdout, stderr } = await cli('train', '--json', '--workspace', ws, '--epochs', '2', ...args);
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string });
  const result = TrainRunResultSchema.parse(lines.find((l) => l.type === 'result'));
  if (!isEngineTrainRun(result)) throw new Error('not an engine run');
  return { result, stderr };
}

let csv = '';
beforeAll(() => {
  requireBuilt();
  csv = writeFlowers(path.join(tmp.dir, 'flowers.csv'));
});
afterAll(() => tmp.cleanup());

describe('trainbench cache build --test-fraction, then train on it', () => {
  it('imports with a 20% split, and train tests on the split by default: the result has a test accuracy', async () => {
    const { stdout } = await cli('cache', 'build', csv, '--label', 'species', '--name', 'flowers', '--test-fraction', '0.2', '--test-seed', '5', '--workspace', ws);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^train: built flowers-[0-9a-f]{12}: 240 records, 1 shard\(s\), 0\.0 MB$/);
    expect(lines[1]).toMatch(/^test: {2}built flowers-test-[0-9a-f]{12}: 60 records, 1 shard\(s\), 0\.0 MB \(20% of 300 records, drawn with seed 5\)$/);
    expect(lines[2]).toMatch(/^in [\d.]+ s; train --data dataset:flowers tests on flowers-test \(--test none: no test set\)$/);
    const testId = /flowers-test-[0-9a-f]{12}/.exec(lines[1])![0];

    const listed = (await cli('cache', 'list', '--workspace', ws)).stdout;
    expect(listed).toContain(`test set: ${testId} (20% held out, seed 5)`);
    expect(listed).toMatch(/held-out test split \(20%, seed 5\) of flowers-[0-9a-f]{12}/);

    const { result, stderr } = await train('--model', 'mlp', '--data', 'dataset:flowers');
    expect(stderr).toContain(`test set: ${testId}, the 20% of the rows of flowers held out when it was imported (--test none trains without one)`);
    expect(result.target.test?.samples).toBe(60);
    expect(result.target.test?.accuracy).toBeGreaterThan(0.6);
    expect(result.target.data).toBe('flowers (240 records), test flowers-test (60 records)');
  }, 120_000);

  it('the same source, fraction and seed hold out the same rows in another workspace; another seed other rows', async () => {
    const json = async (workspace: string, seed: string) =>
      JSON.parse((await cli('cache', 'build', csv, '--label', 'species', '--name', 'flowers', '--test-fraction', '0.2', '--test-seed', seed, '--json', '--workspace', workspace)).stdout) as BuildResult;
    const shardHashes = (workspace: string, r: BuildResult) =>
      (JSON.parse(readFileSync(path.join(workspace, r.test!.dir, 'manifest.json'), 'utf8')) as { shards: { sha256: string }[] }).shards.map((s) => s.sha256);
    const other = path.join(tmp.dir, 'ws-again');
    const first = await json(ws, '5');
    const again = await json(other, '5');
    expect(first.hit).toBe(true); // built by the test above: the same split is a cache hit
    expect(again.test!.dataset.id).toBe(first.test!.dataset.id);
    expect(shardHashes(other, again)).toEqual(shardHashes(ws, first));
    const reseeded = await json(other, '6');
    expect(reseeded.test!.dataset.records).toBe(60);
    expect(shardHashes(other, reseeded)).not.toEqual(shardHashes(ws, first));
  }, 60_000);

  it('--test none trains without a test set and says what that means; --test <dataset> chooses one', async () => {
    const none = await train('--model', 'mlp', '--data', 'dataset:flowers', '--test', 'none');
    expect(none.result.target.test).toBeUndefined();
    expect(none.stderr).toContain(
      'no test set: --test none; the run measures accuracy only on the records it trains on, which says how well it fits them, not how it does on data it has not seen',
    );
    const chosen = await train('--model', 'mlp', '--data', 'dataset:flowers', '--test', 'flowers-test');
    expect(chosen.stderr).toContain('test set: flowers-test\n');
    expect(chosen.result.target.test?.samples).toBe(60);
  }, 120_000);

  it('says plainly when a dataset was imported without a test split', async () => {
    await cli('cache', 'build', csv, '--label', 'species', '--name', 'whole', '--workspace', ws);
    const { result, stderr } = await train('--model', 'mlp', '--data', 'dataset:whole', '--max-steps', '3');
    expect(result.target.test).toBeUndefined();
    expect(stderr).toContain('no test set: whole was imported without a held-out split (cache build --test-fraction 0.2 holds one out; --test <dataset> chooses one)');
    // The printed result says it too, where a person reads the accuracy.
    const text = await cli('train', '--model', 'mlp', '--data', 'dataset:whole', '--max-steps', '3', '--workspace', ws);
    expect(text.stdout).toMatch(/^result {5}no test set: the accuracy is on the records the model trained on \(fitting them can reach 100%\), not on unseen data;/m);
  }, 60_000);

  it('refuses bad split values and test sets, naming the value', async () => {
    const build = (...args: string[]) => refused('cache', 'build', csv, '--label', 'species', '--name', 'bad', '--workspace', ws, ...args);
    expect(await build('--test-fraction', '0.7')).toContain(
      "option '--test-fraction <f>' argument '0.7' is invalid. --test-fraction: test fraction 0.7 is not above 0 and at most 0.5: it is the share of the rows held out as the test set, e.g. 0.2 for 20%",
    );
    expect(await build('--test-fraction', '0')).toContain('--test-fraction: test fraction 0 is not above 0 and at most 0.5');
    expect(await build('--test-fraction', 'abc')).toContain('--test-fraction: "abc" is not a number: give the share of the rows to hold out, e.g. 0.2 for 20%');
    expect(await build('--test-fraction', '0.2', '--test-seed', '-1')).toContain('--test-seed: split seed -1 is not a whole number from 0 to 4294967295');
    expect(await build('--test-fraction', '0.2', '--test-seed', '1.5')).toContain('--test-seed: split seed 1.5 is not a whole number');
    expect(await build('--test-seed', '4')).toContain('trainbench: --test-seed 4 draws a held-out test split: give its size with --test-fraction too (e.g. --test-fraction 0.2)');
    expect(await build('--test-fraction', '0.001')).toContain(
      'trainbench: test fraction 0.001 of 300 records holds out 0, which leaves no test set: use a fraction of at least 0.0017 here, or more rows',
    );
    expect((await cli('cache', 'list', '--json', '--workspace', ws)).stdout).not.toContain('"bad');

    expect(await refused('train', '--data', 'fashion-mnist', '--test', 'none', '--workspace', ws)).toContain(
      'trainbench: --test "none" chooses the test set of a workspace dataset (--data dataset:<name>); --data fashion-mnist brings its own test set',
    );
    expect(await refused('train', '--data', 'dataset:flowers,whole', '--test', 'flowers-test', '--workspace', ws)).toContain(
      'trainbench: --data dataset:flowers,whole and --test "flowers-test" name two test sets: give one',
    );
    // A test set stored otherwise than the training set (two classes, not three) is refused before training.
    await cli('cache', 'build', writeFlowers(path.join(tmp.dir, 'two.csv'), SPECIES.slice(0, 2)), '--label', 'species', '--name', 'two', '--workspace', ws);
    expect(await refused('train', '--model', 'mlp', '--data', 'dataset:flowers', '--test', 'two', '--workspace', ws)).toContain(
      "trainbench: test set two labels 'y' with 2 text classes (setosa, versicolor) but flowers with 3 text classes (setosa, versicolor, virginica)",
    );
  }, 120_000);
});
