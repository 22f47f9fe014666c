import { existsSync, promises as fs, statSync } from 'node:fs';
import path from 'node:path';

import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { ModelSpec } from '../api/model-spec';
import { BUILTIN_MODELS, isBuiltinModel, ModelSpecSchema } from '../api/model-spec';
import { RECIPES } from '../api/recipes';
import type { DataSource } from '../api/training';
import { OptimizerSchema, TrainOptionsSchema } from '../api/training';

/** The values the contract accepts for the train command's choice flags (read from the schemas, not repeated). */
export const TRAIN_CHOICES = {
  optimizer: OptimizerSchema.options.map((o) => o.shape.kind.value),
  precision: TrainOptionsSchema.shape.precision.unwrap().options,
  phaseTiming: TrainOptionsSchema.shape.phaseTiming.unwrap().options,
};

/** Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The choice a mistyped value most likely meant ("adam" -> "adamw"), or null when none is close. */
export function closestChoice(value: string, choices: readonly string[]): string | null {
  const v = value.toLowerCase();
  const prefix = (c: string) => v.length >= 2 && (c.startsWith(v) || v.startsWith(c));
  const scored = choices.map((c) => ({ c, d: prefix(c) ? 0.5 : editDistance(v, c) }));
  const best = scored.reduce((a, b) => (b.d < a.d ? b : a));
  return best.d <= Math.max(1, Math.floor(best.c.length / 3)) ? best.c : null;
}

/** A commander parser that accepts one of `choices` and names the closest one when the value is not. */
export function choiceArg<T extends string>(flag: string, choices: readonly T[]) {
  return (value: string): T => {
    if ((choices as readonly string[]).includes(value)) return value as T;
    const near = closestChoice(value, choices);
    throw new InvalidArgumentError(
      `${flag} must be one of ${choices.join(', ')}, got ${JSON.stringify(value)}${near ? `; did you mean ${JSON.stringify(near)}?` : ''}`,
    );
  };
}

/** A commander parser for a whole number >= min, naming the flag and the value it refuses. */
export function intArg(flag: string, min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${flag} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
    return n;
  };
}

/** A commander parser for a fraction in (0, 1], naming the flag and the value it refuses. */
export function ratioArg(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!(n > 0 && n <= 1)) throw new InvalidArgumentError(`${flag} must be a number in (0, 1], got ${JSON.stringify(value)}`);
    return n;
  };
}

/** A commander parser for seconds in [min, max], naming the flag and the value it refuses. */
export function secondsRangeArg(flag: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !(n >= min && n <= max)) throw new InvalidArgumentError(`${flag} must be a number of seconds from ${min} to ${max}, got ${JSON.stringify(value)}`);
    return n;
  };
}

const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 2 ** 20, mb: 2 ** 20, mib: 2 ** 20, g: 2 ** 30, gb: 2 ** 30, gib: 2 ** 30 };

/** "1073741824", "1GiB", "512MiB", "64k": bytes as a whole number (units are binary). */
export function parseBytes(value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  const unit = m ? BYTE_UNITS[m[2].toLowerCase()] : undefined;
  const bytes = m && unit !== undefined ? Math.round(Number(m[1]) * unit) : NaN;
  if (!Number.isSafeInteger(bytes) || bytes < 1) {
    throw new InvalidArgumentError(`expected a byte count such as 1073741824, 1GiB or 512MiB, got ${JSON.stringify(value)}`);
  }
  return bytes;
}

const isFile = (p: string) => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

/**
 * `--model`: a built-in name or a JSON spec file, validated against the contract. A relative path not found
 * from here is looked for in `workspaceDir`, so the models/<name>.json the forms and `models size --save`
 * write train from any folder.
 */
export async function resolveModel(value: string, workspaceDir?: string): Promise<{ spec: ModelSpec; name: string }> {
  let raw: unknown;
  let name: string;
  if (isBuiltinModel(value)) {
    raw = BUILTIN_MODELS[value];
    name = value;
  } else {
    const inWorkspace = workspaceDir && !path.isAbsolute(value) ? path.resolve(workspaceDir, value) : null;
    const file = isFile(value) ? value : inWorkspace && isFile(inWorkspace) ? inWorkspace : null;
    if (!file) {
      throw new ApiError(
        'E_BAD_INPUT',
        `--model ${JSON.stringify(value)} is neither a built-in model (${Object.keys(BUILTIN_MODELS).join(', ')}) nor a spec file (no file at ${path.resolve(value)}${inWorkspace ? ` or ${inWorkspace}` : ''})`,
      );
    }
    try {
      raw = JSON.parse(await fs.readFile(file, 'utf8'));
    } catch (err) {
      throw new ApiError('E_BAD_INPUT', `model spec ${file} is not valid JSON: ${(err as Error).message}`);
    }
    name = path.basename(file);
  }
  const parsed = ModelSpecSchema.safeParse(raw);
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `model spec ${name} is invalid: ${formatIssues(parsed.error, 'spec')}`);
  return { spec: parsed.data, name };
}

/**
 * `--data`: "fashion-mnist" (Debian's package), "example-board" (built in), "dataset:<train>[,<test>]" for
 * caches in the workspace, a folder holding the four MNIST-style IDX files, or
 * "train-images,train-labels[,test-images,test-labels]".
 */
export function resolveData(value: string): DataSource {
  if (value === 'fashion-mnist') return { kind: 'fashion-mnist' };
  if (value === 'example-board') return { kind: 'example-board' };
  if (value.startsWith('dataset:')) {
    const [train, test] = value.slice('dataset:'.length).split(',');
    return { kind: 'dataset', train, test: test || undefined };
  }
  const parts = value.split(',');
  if (parts.length === 1 && existsSync(value) && statSync(value).isDirectory()) {
    return { kind: 'fashion-mnist', dir: path.resolve(value) };
  }
  if (parts.length === 2 || parts.length === 4) {
    const [images, labels, testImages, testLabels] = parts.map((p) => path.resolve(p));
    return {
      kind: 'idx',
      train: { images, labels },
      test: testImages ? { images: testImages, labels: testLabels } : undefined,
    };
  }
  throw new ApiError(
    'E_BAD_INPUT',
    `--data ${JSON.stringify(value)}: use "fashion-mnist", "example-board", "dataset:<train>[,<test>]", a folder of MNIST-style IDX files, or train-images,train-labels[,test-images,test-labels]`,
  );
}

/** The flags that pick what a benchmark-like command measures (benchmark-training, optimise). */
/**
 * Declares the flags MeasuredTargetFlags reads (what is measured: model, data,
 * device, precision and the loader/step settings) on a command that measures
 * training; `measured` names what --sample-ratio's epoch feeds into.
 */
export function measuredTargetOptions(cmd: Command, sampleRatioNote: string): Command {
  return cmd
    .option('--model <name|spec.json>', 'built-in model (mlp, cnn, bottleneck_resnet) or a JSON spec file (a relative path is also looked for in the workspace: models/<name>.json)', 'mlp')
    .option('--data <source>', 'fashion-mnist, example-board, dataset:<train>, a folder of IDX files, or train-images,train-labels', 'fashion-mnist')
    .option('--device <name>', 'cpu, cuda:N, or auto (the first GPU when there is one)', 'cpu')
    .option('--precision <p>', 'fp32, or mixed precision bf16 / fp16 (CUDA)', choiceArg('--precision', TRAIN_CHOICES.precision))
    .option('--batch-size <n>', 'samples per micro-batch', intArg('--batch-size', 1))
    .option('--accumulation <n>', 'micro-batches per optimizer step', intArg('--accumulation', 1))
    .option('--loader-workers <n>', 'threads gathering batches ahead of the step', intArg('--loader-workers', 0))
    .option('--prefetch <n>', 'batches prepared ahead', intArg('--prefetch', 1))
    .option('--gpu-prefetch <n>', 'CUDA: batches copied ahead to the device', intArg('--gpu-prefetch', 1))
    .option('--sample-ratio <r>', `fraction of the training set per epoch${sampleRatioNote}`, ratioArg('--sample-ratio'))
    .option('--threads <n>', 'CPU threads (0 = all cores)', intArg('--threads', 0));
}

export interface MeasuredTargetFlags {
  model: string;
  /** Where a relative --model path is looked for when it is not found from here. */
  workspace?: string;
  data: string;
  device: string;
  precision?: 'fp32' | 'bf16' | 'fp16';
  batchSize?: number;
  accumulation?: number;
  loaderWorkers?: number;
  prefetch?: number;
  gpuPrefetch?: number;
  sampleRatio?: number;
  seed?: number;
  threads?: number;
}

/**
 * The model, data and options such a command measures: the recipe's batch for a
 * built-in model (the service picks the family's optimizer), then every flag given.
 * Checked by the caller's own request schema.
 */
export async function measuredTarget(flags: MeasuredTargetFlags): Promise<{ spec: ModelSpec; data: DataSource; options: Record<string, unknown> }> {
  const { spec, name } = await resolveModel(flags.model, flags.workspace);
  const data = resolveData(flags.data);
  const recipe = isBuiltinModel(name) ? RECIPES[name] : {};
  const given = {
    batchSize: flags.batchSize,
    accumulation: flags.accumulation,
    loaderWorkers: flags.loaderWorkers,
    prefetch: flags.prefetch,
    gpuPrefetch: flags.gpuPrefetch,
    sampleRatio: flags.sampleRatio,
    precision: flags.precision,
    seed: flags.seed,
    threads: flags.threads,
  };
  const options = {
    ...(recipe.batchSize !== undefined ? { batchSize: recipe.batchSize } : {}),
    device: flags.device,
    ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)),
  };
  return { spec, data, options };
}
