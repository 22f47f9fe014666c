import { Command, InvalidArgumentError } from 'commander';

import type { BuildProgress, BuildResult, CacheDType, DatasetSummary, SourceSpec } from '../api/datasets';
import { CacheDTypeSchema, DEFAULT_SHARD_BYTES, MAX_SPLIT_SEED, splitSeedProblem, testFractionProblem } from '../api/datasets';
import { newJobId } from '../api/ids';
import { writeBoardDumps } from '../core/datasets/example-board';
import { parseRecordLayout } from '../core/datasets/importers/record-layout';
import { createServices, type Services } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { parseBytes } from './train-inputs';
import { jsonText, textOut } from './json-out';
import { UsageError } from './usage-error';

function dtype(value: string, where: string): CacheDType {
  const parsed = CacheDTypeSchema.safeParse(value);
  if (!parsed.success) throw new UsageError(`${where}: dtype ${JSON.stringify(value)} is not one of ${CacheDTypeSchema.options.join(', ')}`);
  return parsed.data;
}

/**
 * Positional sources: `file.npy[:field]`, `features.npy:x labels.npy:y` (side by side), `file.npz`, `file.csv` (with --label),
 * `images.gz:x labels.gz:y` (IDX), headerless dumps `file:field:dtype:d1,d2`,
 * or one dump of interleaved records with `--record name:dtype:shape,...`.
 */
export function sourceFromArgs(
  files: string[],
  opts: { label?: string; labelDtype?: 'int32' | 'float32'; syntheticBoard?: number; seed?: number; record?: string },
): SourceSpec {
  if (opts.syntheticBoard !== undefined) return { kind: 'synthetic-board', records: opts.syntheticBoard, seed: opts.seed ?? 0 };
  if (files.length === 0) throw new UsageError('name a source file (or --synthetic-board N)');
  if (opts.record !== undefined) {
    if (files.length !== 1) throw new UsageError(`--record describes the records of one raw file, but ${files.length} files were given (${files.join(' ')})`);
    return { kind: 'raw', files: [{ path: files[0], record: parseRecordLayout(opts.record) }] };
  }
  const parts = files.map((f) => f.split(':'));
  if (parts.every((p) => p.length === 4)) {
    return {
      kind: 'raw',
      files: parts.map(([path, field, dt, shape]) => ({
        path,
        field,
        dtype: dtype(dt, path),
        shape: shape === '' ? [] : shape.split(',').map((d) => {
          const n = Number(d);
          if (!Number.isInteger(n) || n < 1) throw new UsageError(`${path}: shape entry ${JSON.stringify(d)} is not a positive integer`);
          return n;
        }),
      })),
    };
  }
  const [path, field] = parts[0];
  if (files.length === 1 && /\.npz$/i.test(path)) return { kind: 'npz', path };
  if (files.length === 1 && /\.npy$/i.test(path)) return { kind: 'npy', path, field: field ?? 'x' };
  if (files.length === 1 && /\.csv$/i.test(path)) {
    if (!opts.label) throw new UsageError(`${path}: say which column is the label with --label <column>`);
    return { kind: 'csv', path, label: opts.label, labelDtype: opts.labelDtype ?? 'int32' };
  }
  if (parts.every(([p]) => /\.npy$/i.test(p))) {
    const unnamed = parts.find((p) => p.length !== 2 || p[1] === '');
    if (unnamed) throw new UsageError(`${unnamed[0]}: name each .npy file's field when several are read side by side, e.g. features.npy:x labels.npy:y`);
    return { kind: 'npy-fields', files: parts.map(([p, f]) => ({ path: p, field: f })) };
  }
  if (parts.every((p) => p.length === 2)) return { kind: 'idx', files: parts.map(([p, f]) => ({ path: p, field: f })) };
  throw new UsageError(
    `cannot tell what ${files.join(' ')} is: use file.npy[:field], features.npy:x labels.npy:y, file.npz, file.csv --label col, images:x labels:y (IDX), or dump:field:dtype:shape`,
  );
}

function progressLine(p: BuildProgress): string {
  const mb = (b: number) => (b / 1e6).toFixed(1);
  const pct = p.bytesTotal ? Math.floor((100 * p.bytesWritten) / p.bytesTotal) : 0;
  const eta = p.etaSeconds == null ? '' : ` ETA ${Math.ceil(p.etaSeconds)} s`;
  return `${p.phase.padEnd(12)} ${String(pct).padStart(3)}%  ${p.records}/${p.recordsTotal} records  ${mb(p.bytesWritten)}/${mb(p.bytesTotal)} MB  ${mb(p.bytesPerSec)} MB/s${eta}`;
}

async function withServices<T>(workspace: string, fn: (s: Services) => Promise<T>): Promise<T> {
  const services = await createServices({ workspaceDir: workspace });
  try {
    return await fn(services);
  } finally {
    await services.dispose();
  }
}

/** `--test-fraction`: a number the split takes, else an error naming the value. */
function fractionArg(value: string): number {
  const n = value.trim() === '' ? NaN : Number(value);
  const problem = Number.isNaN(n) ? `${JSON.stringify(value)} is not a number: give the share of the rows to hold out, e.g. 0.2 for 20%` : testFractionProblem(n);
  if (problem) throw new InvalidArgumentError(`--test-fraction: ${problem}`);
  return n;
}

/** `--test-seed`: a whole number from 0 to 2^32-1, else an error naming the value. */
function seedArg(value: string): number {
  const n = value.trim() === '' ? NaN : Number(value);
  const problem = Number.isNaN(n) ? `${JSON.stringify(value)} is not a number: give a whole number from 0 to ${MAX_SPLIT_SEED}` : splitSeedProblem(n);
  if (problem) throw new InvalidArgumentError(`--test-seed: ${problem}`);
  return n;
}

const percent = (fraction: number) => `${+(fraction * 100).toFixed(2)}%`;

/** What `cache build` prints: the cache, and the held-out test split's when there is one. */
export function builtText(r: BuildResult): string {
  const sizes = (d: DatasetSummary) => `${d.id}: ${d.records} records, ${d.shards} shard(s), ${(d.bytes / 1e6).toFixed(1)} MB`;
  const verb = (hit: boolean) => (hit ? 'cache hit' : 'built');
  if (!r.test) return `${verb(r.hit)} ${sizes(r.dataset)} in ${r.seconds.toFixed(1)} s`;
  const split = r.test.dataset.split;
  const drawn = split ? ` (${percent(split.fraction)} of ${split.sourceRecords} records, drawn with seed ${split.seed})` : '';
  return [
    `train: ${verb(r.hit)} ${sizes(r.dataset)}`,
    `test:  ${verb(r.test.hit)} ${sizes(r.test.dataset)}${drawn}`,
    `in ${r.seconds.toFixed(1)} s; train --data dataset:${r.dataset.name} tests on ${r.test.dataset.name} (--test none: no test set)`,
  ].join('\n');
}

/** A cache's part in a held-out split, for `cache list`. */
function splitWords(d: DatasetSummary): string {
  if (!d.split) return '';
  return d.split.part === 'test' ? `\n     held-out test split (${percent(d.split.fraction)}, seed ${d.split.seed}) of ${d.split.other}` : `\n     test set: ${d.split.other} (${percent(d.split.fraction)} held out, seed ${d.split.seed})`;
}

const out = (json: boolean | undefined, value: unknown, text: () => string) =>
  process.stdout.write((json ? jsonText(value, 2) : textOut(text())) + '\n');

export function cacheCommand(): Command {
  const cache = new Command('cache').description('build, list, verify and remove dataset caches');
  const ws = ['--workspace <dir>', 'workspace folder', defaultWorkspaceDir()] as const;

  cache
    .command('build')
    .description('import a source into a cache (a hit when the same source and settings were cached before)')
    .argument('[sources...]', 'file.npy[:field] | x.npy:x y.npy:y | file.npz | file.csv | images:x labels:y | dump:field:dtype:shape | dump (with --record)')
    .requiredOption('--name <name>', 'dataset name (letters, digits, _ . -)')
    .option('--label <column>', 'CSV: the label column')
    .option('--label-dtype <dtype>', 'CSV: int32 (classes; text labels become indices into sorted class names) or float32 (regression)', 'int32')
    .option(
      '--record <layout>',
      'one headerless file of interleaved records (a structured array\'s tofile()): its packed members as name:dtype:shape,..., an empty shape for one value, e.g. features:uint8:104,9,9,policy:float16:1496,value:float16:',
    )
    .option('--synthetic-board <records>', 'the built-in board dataset, written as raw dumps first', (v) => Number(v))
    .option('--seed <n>', 'seed of the synthetic board positions', (v) => Number(v), 0)
    .option(
      '--test-fraction <f>',
      'hold out this share of the records (above 0, at most 0.5; e.g. 0.2), drawn by --test-seed, as a second cache <name>-test: the test set `train --data dataset:<name>` uses',
      fractionArg,
    )
    .option('--test-seed <n>', 'seed of the held-out draw: the same source, fraction and seed hold out the same records (default 0)', seedArg)
    .option('--shard-size <bytes>', 'shard size, e.g. 256MiB', parseBytes, DEFAULT_SHARD_BYTES)
    .option('--map <from:to:dtype...>', 'rename or re-type a field, e.g. policy:policy:float16')
    .option('--json', 'print the result as JSON')
    .option(...ws)
    .action(async (files: string[], o) => {
      await withServices(o.workspace, async (s) => {
        let source = sourceFromArgs(files, o);
        if (source.kind === 'synthetic-board') source = await writeBoardDumps(s.workspace, source.records, source.seed);
        const fieldMap = ((o.map as string[] | undefined) ?? []).map((m) => {
          const [from, to, dt] = m.split(':');
          if (!from || !to || !dt) throw new UsageError(`--map ${JSON.stringify(m)}: expected from:to:dtype`);
          return { from, to, dtype: dtype(dt, '--map') };
        });
        if (o.testSeed !== undefined && o.testFraction === undefined) {
          throw new UsageError(`--test-seed ${o.testSeed} draws a held-out test split: give its size with --test-fraction too (e.g. --test-fraction 0.2)`);
        }
        const testSplit = o.testFraction === undefined ? undefined : { fraction: o.testFraction as number, seed: (o.testSeed as number | undefined) ?? 0 };
        const jobId = newJobId();
        const onSigint = () => void s.cancelJob(jobId);
        process.once('SIGINT', onSigint);
        const tty = process.stderr.isTTY;
        try {
          const r = await s.datasets.build(
            { source, name: o.name, shardBytes: o.shardSize, fieldMap, jobId, ...(testSplit ? { testSplit } : {}) },
            { allowPathsOutsideWorkspace: true },
            (p) => process.stderr.write(tty ? `\r\x1b[2K${progressLine(p)}` : p.phase === 'reading' ? '' : `${progressLine(p)}\n`),
          );
          if (tty) process.stderr.write('\r\x1b[2K');
          out(o.json, r, () => builtText(r));
        } finally {
          process.off('SIGINT', onSigint);
        }
      });
    });

  cache
    .command('list')
    .description('caches in the workspace, with their size, fields and whether they open')
    .option('--json', 'print JSON')
    .option(...ws)
    .action(async (o) => {
      await withServices(o.workspace, async (s) => {
        const list = await s.datasets.list();
        out(o.json, list, () =>
          list.length === 0
            ? 'no datasets cached in this workspace'
            : list
                .map((d) => `${d.problem ? 'BAD ' : 'ok  '} ${d.id.padEnd(40)} ${String(d.records).padStart(9)} records ${(d.bytes / 1e6).toFixed(1).padStart(9)} MB  ${d.fields.map((f) => `${f.name}:${f.dtype}[${f.shape.join('x')}]`).join(' ')}${splitWords(d)}${d.problem ? `\n     ${d.problem}` : ''}`)
                .join('\n'),
        );
      });
    });

  cache
    .command('verify')
    .description('check every shard against its SHA-256 in the manifest')
    .argument('<id>', 'dataset id or name')
    .option('--json', 'print JSON')
    .option(...ws)
    .action(async (id: string, o) => {
      await withServices(o.workspace, async (s) => {
        const r = await s.datasets.verify(id);
        out(o.json, r, () => (r.ok ? `${r.id}: ok (${r.seconds.toFixed(1)} s)` : `${r.id}: ${r.problems.length} problem(s)\n  ${r.problems.join('\n  ')}`));
        if (!r.ok) process.exitCode = 1;
      });
    });

  cache
    .command('rm')
    .description('remove a cache')
    .argument('<id>', 'dataset id or name')
    .option(...ws)
    .action(async (id: string, o) => {
      await withServices(o.workspace, async (s) => {
        const { removed } = await s.datasets.remove(id);
        process.stdout.write(`removed ${removed}\n`);
      });
    });
  return cache;
}
