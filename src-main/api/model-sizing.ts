import { z } from 'zod';

import type { DatasetSummary } from './datasets';
import type { BuiltinModelName, ModelSpec, ModelSpecInput } from './model-spec';
import { BottleneckResnetSpecSchema, BUILTIN_MODELS, CnnSpecSchema, isBuiltinModel, MlpSpecSchema, ModelSpecSchema } from './model-spec';

/**
 * Each model family sized to a dataset (issue 27 item 1, ADR 0036): the input from the data field `x`,
 * the outputs from the label. The engine reads `x` as the input and, for mlp and cnn, `y` as the target:
 * an integer `y` is a class index (softmax cross-entropy, classes = its largest value + 1, or its class
 * names when the source held text), a float `y` a regression target (mean squared error, one output per
 * value). The board network reads `policy` and `value` instead. A family that does not fit says why.
 */
export const SIZED_FAMILIES = ['mlp', 'cnn', 'bottleneck_resnet'] as const;
export type SizedFamily = (typeof SIZED_FAMILIES)[number];

/** What a person may change of a sized model: one width per layer (mlp, cnn) or stage (board network); their count is the depth. */
export interface SizingChoice {
  widths?: number[];
  /** Board network only: BottleneckBlocks per stage. */
  blocksPerStage?: number;
}

export type SizedModel = { family: SizedFamily; spec: ModelSpec; summary: string; problem: null } | { family: SizedFamily; spec: null; summary: null; problem: string };

type Field = Pick<DatasetSummary['fields'][number], 'name' | 'dtype' | 'shape' | 'stats' | 'classes'>;

const values = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);
const isInteger = (dtype: string) => /int|bool/.test(dtype);
const shapeText = (shape: readonly number[]) => (shape.length === 0 ? 'one value' : `shape [${shape.join(', ')}]`);

/** The widths a family has by default (the contract's defaults, read from it). */
export function defaultWidths(family: SizedFamily): number[] {
  if (family === 'mlp') return MlpSpecSchema.parse({ family, input: [1], outputs: 1 }).hidden;
  if (family === 'cnn') return CnnSpecSchema.parse({ family, input: [1, 1, 1], outputs: 1 }).channels;
  return BottleneckResnetSpecSchema.parse({ family }).widths;
}

/** The image a field's per-record shape is ([C,H,W], or [H,W] as one channel), or why it is not one. */
function imageOf(x: Field): [number, number, number] | string {
  if (x.shape.length === 3) return [x.shape[0], x.shape[1], x.shape[2]];
  if (x.shape.length === 2) return [1, x.shape[0], x.shape[1]];
  return `field 'x' has ${shapeText(x.shape)} per record, not an image ([channels, height, width] or [height, width])`;
}

/** The head of mlp and cnn for the label field `y`: task and outputs, or why `y` cannot be a target. */
export function labelHead(fields: readonly Field[]): { task: 'classification' | 'regression'; outputs: number; words: string } | string {
  const y = fields.find((f) => f.name === 'y');
  if (!y) return `the dataset has no label field 'y' (it has ${fields.map((f) => `'${f.name}'`).join(', ')})`;
  const n = values(y.shape);
  if (!isInteger(y.dtype)) return { task: 'regression', outputs: n, words: `regression of ${n} value${n === 1 ? '' : 's'}` };
  if (n !== 1) return `the label 'y' holds ${n} ${y.dtype} values per record: a classifier needs one class index, a regression target float values`;
  let classes: number;
  if (y.classes && y.classes.length > 0) classes = y.classes.length;
  else if (y.stats) {
    if (y.stats.min < 0) return `the label 'y' has the negative value ${y.stats.min}: class indices start at 0`;
    classes = Math.floor(y.stats.max) + 1;
  } else return "the label 'y' has no recorded largest value, so its number of classes is unknown (rebuild the cache)";
  if (classes < 2) return `the label 'y' has a single class (${classes - 1}): there is nothing to classify`;
  return { task: 'classification', outputs: classes, words: `${classes} classes` };
}

function checked(family: SizedFamily, raw: ModelSpecInput, summary: string): SizedModel {
  const parsed = ModelSpecSchema.safeParse(raw);
  if (!parsed.success) return { family, spec: null, summary: null, problem: `${family}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
  return { family, spec: parsed.data, summary, problem: null };
}

/** One family sized to the dataset's fields, with the person's widths where given. */
export function sizeModel(family: SizedFamily, fields: readonly Field[], choice: SizingChoice = {}): SizedModel {
  const fail = (problem: string): SizedModel => ({ family, spec: null, summary: null, problem });
  const x = fields.find((f) => f.name === 'x');
  if (!x) return fail(`the dataset has no input field 'x' (it has ${fields.map((f) => `'${f.name}'`).join(', ')})`);
  const widths = choice.widths && choice.widths.length > 0 ? choice.widths : defaultWidths(family);
  if (family === 'bottleneck_resnet') {
    const policy = fields.find((f) => f.name === 'policy');
    const value = fields.find((f) => f.name === 'value');
    if (!policy || !value) return fail("bottleneck_resnet is the board policy/value network: it needs fields 'policy' and 'value' (a classifier or a regression on 'y' is mlp or cnn)");
    if (values(value.shape) !== 1) return fail(`bottleneck_resnet predicts one value per record, but field 'value' has ${shapeText(value.shape)}`);
    const image = imageOf(x);
    if (typeof image === 'string') return fail(image);
    const stages = widths.length;
    const strides = Array.from({ length: stages }, (_, i) => (i === 0 ? 1 : 2));
    const layers = Array.from({ length: stages }, () => choice.blocksPerStage ?? 2);
    const policyClasses = values(policy.shape);
    return checked(family, { family, input: image, widths, strides, layers, policyClasses }, `input [${image.join(', ')}], ${policyClasses} policy classes + value`);
  }
  const head = labelHead(fields);
  if (typeof head === 'string') return fail(head);
  if (family === 'mlp') {
    const input = [values(x.shape)];
    return checked(family, { family, task: head.task, input, outputs: head.outputs, hidden: widths }, `input [${input[0]}], ${head.words}`);
  }
  const image = imageOf(x);
  if (typeof image === 'string') return fail(image);
  const strides = widths.map((_, i) => (i === 0 ? 1 : 2));
  return checked(family, { family, task: head.task, input: image, outputs: head.outputs, channels: widths, strides }, `input [${image.join(', ')}], ${head.words}`);
}

/** Every family sized to a dataset, in the order of SIZED_FAMILIES. */
export function sizeModelsToDataset(dataset: Pick<DatasetSummary, 'fields'>): SizedModel[] {
  return SIZED_FAMILIES.map((family) => sizeModel(family, dataset.fields));
}

/** The model select's value of a family sized to the chosen dataset. */
export const SIZED_PREFIX = 'sized:';
export const sizedChoice = (family: SizedFamily) => `${SIZED_PREFIX}${family}`;
export function sizedFamilyOf(value: string): SizedFamily | null {
  if (!value.startsWith(SIZED_PREFIX)) return null;
  const family = value.slice(SIZED_PREFIX.length);
  return (SIZED_FAMILIES as readonly string[]).includes(family) ? (family as SizedFamily) : null;
}

/** A saved spec's name: one file under models/, never a path. */
export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}(\.json)?$/;
export const ModelNameSchema = z
  .string()
  .regex(MODEL_NAME_PATTERN, "a model's name is letters, digits, '-' and '_' (at most 64, not starting with '-' or '_'), optionally ending in .json");

export const SaveSpecRequestSchema = z
  .object({
    name: ModelNameSchema,
    spec: ModelSpecSchema,
    /** Replace a spec file of that name; without it an existing file is refused. */
    overwrite: z.boolean().default(false),
  })
  .strict();
export type SaveSpecRequest = z.input<typeof SaveSpecRequestSchema>;
export const SaveSpecResultSchema = z.object({ path: z.string(), spec: ModelSpecSchema });

/**
 * The model to show when the data changes: a built-in whose input does not take the dataset's `x` becomes
 * its family sized to the dataset (or the mlp, which takes any x, when its family does not fit); a sized
 * choice goes back to its built-in when the data is no workspace dataset. Anything else stays as chosen.
 */
export function modelForData(model: string, dataset: Pick<DatasetSummary, 'fields'> | null): string {
  const sized = sizedFamilyOf(model);
  if (!dataset) return sized ?? model;
  if (sized) return sizeModel(sized, dataset.fields).spec ? model : sizeModel('mlp', dataset.fields).spec ? sizedChoice('mlp') : sized;
  if (!isBuiltinModel(model)) return model;
  const x = dataset.fields.find((f) => f.name === 'x');
  const builtin = ModelSpecSchema.parse(BUILTIN_MODELS[model]);
  if (x && values(x.shape) === values(builtin.input)) return model;
  if (sizeModel(model, dataset.fields).spec) return sizedChoice(model);
  return sizeModel('mlp', dataset.fields).spec ? sizedChoice('mlp') : model;
}

export type BuiltinForData = { spec: ModelSpec; sized: SizedModel | null; problem: null } | { spec: null; sized: null; problem: string };

/** Whether a built-in's head takes what sizing found in the label: a classifier with at least the classes, a regression of the same values. */
function headTakes(builtin: ModelSpec, sized: ModelSpec): boolean {
  if (builtin.family === 'bottleneck_resnet' || sized.family === 'bottleneck_resnet') {
    return builtin.family === 'bottleneck_resnet' && sized.family === 'bottleneck_resnet' && builtin.policyClasses === sized.policyClasses;
  }
  if (builtin.task !== sized.task) return false;
  return builtin.task === 'classification' ? builtin.outputs >= sized.outputs : builtin.outputs === sized.outputs;
}

/**
 * A built-in chosen by name for a dataset of the workspace (the CLI's --model with --data dataset:..., issue 41
 * item 9): the built-in itself when its input takes the dataset's `x` and its head the label, else its family
 * sized to the dataset as New run sizes it (modelForData), or the reason neither can train it. Unlike the
 * form it never switches family: a command names the family it trains.
 */
export function builtinForData(model: BuiltinModelName, fields: readonly Field[]): BuiltinForData {
  const builtin = ModelSpecSchema.parse(BUILTIN_MODELS[model]);
  const x = fields.find((f) => f.name === 'x');
  const inputTakes = x !== undefined && values(x.shape) === values(builtin.input);
  const sized = sizeModel(model, fields);
  // Sizing finds no fit but the input does: kept as New run keeps it (a flat 784 for the 28x28 cnn); the engine judges the rest.
  if (!sized.spec) return inputTakes ? { spec: builtin, sized: null, problem: null } : { spec: null, sized: null, problem: sized.problem };
  if (inputTakes && headTakes(builtin, sized.spec)) return { spec: builtin, sized: null, problem: null };
  return { spec: sized.spec, sized, problem: null };
}

/** A spec's input and head in words: input "28x28" (an image's single channel left out), head "10 outputs". */
export function inputAndHeadWords(spec: ModelSpec): { input: string; head: string } {
  const shape = spec.input.length === 3 && spec.input[0] === 1 ? spec.input.slice(1) : spec.input;
  const head = spec.family === 'bottleneck_resnet' ? `${spec.policyClasses} policy classes + value` : `${spec.outputs} ${spec.task === 'regression' ? 'regression ' : ''}outputs`;
  return { input: shape.join('x'), head };
}
