import { z } from 'zod';

/** Sizes a spec may use; the engine checks the same bound again. */
const size = z.number().int().min(1).max(1 << 20);
const probability = z.number().min(0).lt(1);

/** Values per input sample a spec may ask for (2^28 floats = 1 GiB a sample): beyond it the product of the sizes overflowed the engine's shapes. */
export const MAX_INPUT_VALUES = 2 ** 28;
const inputFits = (input: readonly number[]) => input.reduce((a, b) => a * b, 1) <= MAX_INPUT_VALUES;
const inputTooLarge = { message: `the input has more than ${MAX_INPUT_VALUES} values per sample`, path: ['input'] };

export const MlpSpecSchema = z
  .object({
    family: z.literal('mlp'),
    task: z.enum(['classification', 'regression']).default('classification'),
    /** Per-sample input shape, flattened by the model. */
    input: z.array(size).min(1).max(4),
    /** Classes (classification) or predicted values (regression). */
    outputs: size,
    hidden: z.array(size).max(64).default([256, 128]),
    dropout: probability.default(0),
  })
  .strict()
  .refine((s) => inputFits(s.input), inputTooLarge);

export const CnnSpecSchema = z
  .object({
    family: z.literal('cnn'),
    task: z.enum(['classification', 'regression']).default('classification'),
    /** [channels, height, width] */
    input: z.tuple([size, size, size]),
    outputs: size,
    /** One conv (+ batch norm) + ReLU per entry. */
    channels: z.array(size).min(1).max(64).default([32, 64, 64]),
    strides: z.array(z.number().int().min(1).max(8)).min(1).max(64).default([1, 2, 2]),
    kernel: z.number().int().min(1).max(15).default(3),
    batchNorm: z.boolean().default(true),
    /** Width of a linear layer after flattening; 0 for none. */
    hidden: z.number().int().min(0).max(1 << 20).default(128),
    dropout: probability.default(0),
  })
  .strict()
  .refine((s) => s.strides.length === s.channels.length, {
    message: 'strides must have one entry per entry of channels',
    path: ['strides'],
  })
  .refine((s) => s.kernel % 2 === 1, { message: 'kernel must be odd', path: ['kernel'] })
  .refine((s) => inputFits(s.input), inputTooLarge);

/** The shogi policy/value network of docs/architecture.md; every size is a parameter, defaults as designed. */
export const BottleneckResnetSpecSchema = z
  .object({
    family: z.literal('bottleneck_resnet'),
    /** [planes, height, width] */
    input: z.tuple([size, size, size]).default([104, 9, 9]),
    stemWidth: size.default(24),
    layers: z.array(z.number().int().min(1).max(64)).min(1).max(16).default([2, 2, 2, 1]),
    strides: z.array(z.number().int().min(1).max(8)).min(1).max(16).default([1, 2, 2, 2]),
    widths: z.array(size).min(1).max(16).default([24, 48, 96, 144]),
    expansion: z.number().int().min(1).max(16).default(4),
    headChannels: size.default(128),
    policyClasses: size.default(1496),
  })
  .strict()
  .refine((s) => s.strides.length === s.layers.length && s.widths.length === s.layers.length, {
    message: 'layers, strides and widths must have one entry per stage',
    path: ['layers'],
  });

export const ModelSpecSchema = z.union([MlpSpecSchema, CnnSpecSchema, BottleneckResnetSpecSchema]);
export type ModelSpec = z.infer<typeof ModelSpecSchema>;
export type ModelSpecInput = z.input<typeof ModelSpecSchema>;

/** Built-in models by name: the Fashion-MNIST MLP and CNN, and the board network. */
export const BUILTIN_MODELS = {
  mlp: { family: 'mlp', input: [1, 28, 28], outputs: 10 },
  cnn: { family: 'cnn', input: [1, 28, 28], outputs: 10 },
  bottleneck_resnet: { family: 'bottleneck_resnet' },
} as const satisfies Record<string, ModelSpecInput>;
export type BuiltinModelName = keyof typeof BUILTIN_MODELS;

export function isBuiltinModel(name: string): name is BuiltinModelName {
  return Object.prototype.hasOwnProperty.call(BUILTIN_MODELS, name);
}

export const ModelInfoSchema = z.object({
  family: z.string(),
  params: z.number().int(),
  /** Forward FLOPs per sample (2 per multiply-add, plus elementwise work). */
  flopsPerSample: z.number(),
  /** Training FLOPs a step must do per sample: 3x the forward over the conv taps inside the input, less the input gradients nothing needs (a first layer's). */
  trainingFlopsPerSample: z.number(),
  input: z.array(z.number().int()),
  layers: z.array(z.object({ name: z.string(), kind: z.string(), shape: z.array(z.number().int()) })),
  parameters: z.array(z.object({ name: z.string(), shape: z.array(z.number().int()), trainable: z.boolean() })),
  heads: z.array(z.object({ name: z.string(), loss: z.string(), target: z.string(), outputs: z.number().int() })),
});
export type ModelInfo = z.infer<typeof ModelInfoSchema>;

/** The sizes a title names where they differ, at each family's defaults (read from its schema, so they cannot drift). */
const DEFAULT_SIZES: Record<string, Record<string, unknown>> = (() => {
  const mlp = MlpSpecSchema.parse({ family: 'mlp', input: [1], outputs: 1 });
  const cnn = CnnSpecSchema.parse({ family: 'cnn', input: [1, 1, 1], outputs: 1 });
  const resnet = BottleneckResnetSpecSchema.parse({ family: 'bottleneck_resnet' });
  return {
    mlp: { hidden: mlp.hidden },
    cnn: { channels: cnn.channels, hidden: cnn.hidden },
    bottleneck_resnet: { widths: resnet.widths, layers: resnet.layers },
  };
})();

/**
 * A model in a title's few words: its family, and the sizes that tell it apart where they differ from the
 * family's defaults ("mlp (hidden 512-256)"), so two runs of one family from different spec files do not read
 * as the same model. `spec` comes from a run file: anything that is not a size list or number is left out.
 */
export function modelWords(spec: { family?: unknown } & Record<string, unknown>): string {
  const family = typeof spec.family === 'string' ? spec.family : 'model';
  const defaults = DEFAULT_SIZES[family] ?? {};
  const sizes = Object.entries(defaults).flatMap(([key, fallback]) => {
    const v = spec[key];
    const ok = typeof v === 'number' ? Number.isInteger(v) : Array.isArray(v) && v.length <= 16 && v.every((x) => Number.isInteger(x));
    if (!ok || JSON.stringify(v) === JSON.stringify(fallback)) return [];
    return [`${key} ${Array.isArray(v) ? v.join('-') || 'none' : String(v)}`];
  });
  return sizes.length ? `${family} (${sizes.join(', ')})` : family;
}
