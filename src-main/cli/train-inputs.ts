import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';

import type { ModelSpec } from '../api/model-spec';
import { isBuiltinModel } from '../api/model-spec';
import { RECIPES } from '../api/recipes';
import type { DataSource } from '../api/training';
import { OptimizerSchema, TrainOptionsSchema } from '../api/training';
import { closestChoice } from './closest-choice';
import { resolveModelAndData } from './model-and-data';

export { closestChoice } from './closest-choice';

/** --model's help, the same for every command that takes it. */
export const MODEL_FLAG_HELP =
  "built-in model (mlp, cnn, bottleneck_resnet; sized to a workspace dataset's records when they differ), the name a spec was saved under (models/<name>.json: trainbench models list), or a JSON spec file";

/** The values the contract accepts for the train command's choice flags (read from the schemas, not repeated). */
export const TRAIN_CHOICES = {
  optimizer: OptimizerSchema.options.map((o) => o.shape.kind.value),
  precision: TrainOptionsSchema.shape.precision.unwrap().options,
  phaseTiming: TrainOptionsSchema.shape.phaseTiming.unwrap().options,
};

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

/** The flags that pick what a benchmark-like command measures (benchmark-training, optimise). */
/**
 * Declares the flags MeasuredTargetFlags reads (what is measured: model, data,
 * device, precision and the loader/step settings) on a command that measures
 * training; `measured` names what --sample-ratio's epoch feeds into.
 */
export function measuredTargetOptions(cmd: Command, sampleRatioNote: string): Command {
  return cmd
    .option('--model <name|spec.json>', MODEL_FLAG_HELP, 'mlp')
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
  /** Where a saved --model name, a relative --model path not found from here, and a dataset:<id> are looked for. */
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
  const { spec, name, data } = await resolveModelAndData(flags.model, flags.data, flags.workspace);
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
