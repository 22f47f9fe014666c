import { z } from 'zod';

import { IdSchema } from './ids';
import { TelemetrySummarySchema } from './telemetry';

/** Storage dtypes of cached fields (little-endian). */
export const CacheDTypeSchema = z.enum([
  'bool', 'int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64', 'float16', 'float32', 'float64',
]);
export type CacheDType = z.infer<typeof CacheDTypeSchema>;

export const DTYPE_BYTES: Record<CacheDType, number> = {
  bool: 1, int8: 1, uint8: 1, int16: 2, uint16: 2, int32: 4, uint32: 4, int64: 8, uint64: 8, float16: 2, float32: 4, float64: 8,
};

export const FieldStatsSchema = z.object({ mean: z.number(), std: z.number(), min: z.number(), max: z.number() });

export const CacheFieldSchema = z.object({
  name: z.string().min(1).max(128).regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, 'field names are letters, digits, _ . -'),
  dtype: CacheDTypeSchema,
  /** Per-record shape; [] is one value per record. */
  shape: z.array(z.number().int().min(1)).max(8),
  recordBytes: z.number().int().min(1),
  /** Statistics of every value of the field, for normalisation and the dataset view. */
  stats: FieldStatsSchema.nullable(),
  /** Class names of a label field whose source held text: value i is classes[i]. */
  classes: z.array(z.string()).optional(),
});

export const CACHE_FORMAT_VERSION = 1;

/** The largest share of a source an import may hold out as its test set: more and the model trains on less than it is judged on. */
export const MAX_TEST_FRACTION = 0.5;
/** Split seeds are 32-bit: the generator that draws the held-out records takes no more. */
export const MAX_SPLIT_SEED = 2 ** 32 - 1;

/** Why a held-out test fraction is not one, naming the value; null when it is. */
export function testFractionProblem(fraction: number): string | null {
  if (Number.isFinite(fraction) && fraction > 0 && fraction <= MAX_TEST_FRACTION) return null;
  return `test fraction ${String(fraction)} is not above 0 and at most ${MAX_TEST_FRACTION}: it is the share of the rows held out as the test set, e.g. 0.2 for 20%`;
}

/** Why a split seed is not one, naming the value; null when it is. */
export function splitSeedProblem(seed: number): string | null {
  if (Number.isInteger(seed) && seed >= 0 && seed <= MAX_SPLIT_SEED) return null;
  return `split seed ${String(seed)} is not a whole number from 0 to ${MAX_SPLIT_SEED}`;
}

/** The most records the built-in board dataset makes in one import. */
export const MAX_BOARD_RECORDS = 10_000_000;

/** Why the board dataset's records or seed are not ones, naming the value; null when both are. */
export function boardSourceProblem(records: number, seed: number): string | null {
  if (!Number.isInteger(records) || records < 1 || records > MAX_BOARD_RECORDS) {
    return `records ${String(records)} is not a whole number from 1 to ${MAX_BOARD_RECORDS.toLocaleString('en-US')}`;
  }
  return Number.isInteger(seed) && seed >= 0 ? null : `seed ${String(seed)} is not a whole number of 0 or more`;
}

/** An import's held-out test split: the share of the records drawn (by the seed) into a second cache. */
export const TestSplitSchema = z
  .object({
    fraction: z.number().superRefine((v, ctx) => {
      const problem = testFractionProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    seed: z
      .number()
      .superRefine((v, ctx) => {
        const problem = splitSeedProblem(v);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .default(0),
  })
  .strict();
export type TestSplit = z.infer<typeof TestSplitSchema>;

/** The name of the cache holding a dataset's held-out test split: `<name>-test`. */
export const heldOutTestName = (name: string): string => `${name}-test`;

/**
 * Set on the two caches of an import with a held-out test split (docs/cache-format.md): which part this
 * cache holds, how the records were drawn, and the id of the other part, so the training part names its test set.
 */
export const HeldOutSplitSchema = z.object({
  part: z.enum(['train', 'test']),
  fraction: z.number().gt(0).lt(1),
  seed: z.number().int().min(0),
  /** Records of the whole source, both parts together. */
  sourceRecords: z.number().int().min(2),
  /** The other part's cache id. */
  other: IdSchema,
});
export type HeldOutSplit = z.infer<typeof HeldOutSplitSchema>;

/** manifest.json of a dataset cache: docs/cache-format.md is the reference. */
export const CacheManifestSchema = z.object({
  format: z.literal('trainbench-cache'),
  formatVersion: z.number().int().min(1),
  /** Re-validated as an id: a tampered manifest's id is shown and passed back as a dataset id. */
  id: IdSchema,
  name: z.string(),
  createdAt: z.string(),
  records: z.number().int().min(1),
  recordsPerShard: z.number().int().min(1),
  fields: z.array(CacheFieldSchema).min(1),
  shards: z.array(
    z.object({
      file: z.string().regex(/^shard-\d{5}\.bin$/),
      records: z.number().int().min(1),
      bytes: z.number().int().min(64),
      /** Byte offset of each field's block, in field order, 64-byte aligned. */
      fieldOffsets: z.array(z.number().int().min(64)),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
    }),
  ),
  source: z.object({
    kind: z.string(),
    description: z.string(),
    fingerprint: z.string(),
    files: z.array(z.object({ path: z.string(), bytes: z.number().int(), mtimeMs: z.number() })),
    /** The source as requested (a SourceSpec), so the loader can read it uncached for comparison. */
    spec: z.unknown().optional(),
  }),
  settings: z.object({ shardBytes: z.number().int(), fieldMap: z.array(z.object({ from: z.string(), to: z.string(), dtype: CacheDTypeSchema })) }),
  /** Present when the cache is one part of an import with a held-out test split. */
  split: HeldOutSplitSchema.optional(),
});
export type CacheManifest = z.infer<typeof CacheManifestSchema>;

const RecordShapeSchema = z.array(z.number().int().min(1)).max(8);

/** One member of a record: a name, a dtype and a per-record shape ([] for one value). */
export const RecordMemberSchema = z.object({ name: CacheFieldSchema.shape.name, dtype: CacheDTypeSchema, shape: RecordShapeSchema }).strict();
export type RecordMember = z.infer<typeof RecordMemberSchema>;

/**
 * A source file's path in the workspace, as a request names it. Bounded: a 4 MiB path was parsed, then refused for
 * the folder it names, as often as a client liked (re-attack 18).
 */
export const SourcePathSchema = z.string().min(1).max(4096);

/** A headerless dump of one field. */
export const RawFieldFileSchema = z.object({ path: SourcePathSchema, field: z.string().min(1), dtype: CacheDTypeSchema, shape: RecordShapeSchema }).strict();
export type RawFieldFile = z.infer<typeof RawFieldFileSchema>;

/** A headerless dump of interleaved records: the members, packed in this order (NumPy's default, align=False). */
export const RawRecordFileSchema = z.object({ path: SourcePathSchema, record: z.array(RecordMemberSchema).min(1).max(64) }).strict();
export type RawRecordFile = z.infer<typeof RawRecordFileSchema>;

/** One .npy file of several read side by side: a plain array becomes `field`. */
export const NpyFieldFileSchema = z.object({ path: SourcePathSchema, field: CacheFieldSchema.shape.name }).strict();
export type NpyFieldFile = z.infer<typeof NpyFieldFileSchema>;

/** Where records come from when building a cache. */
export const SourceSpecSchema = z.discriminatedUnion('kind', [
  /** MNIST-style IDX files (gzip or raw), one field per file. */
  z.object({ kind: z.literal('idx'), files: z.array(z.object({ path: SourcePathSchema, field: z.string().min(1).max(128) })).min(1).max(64) }).strict(),
  /** A NumPy .npy file: a plain array becomes `field`, a structured one a field per member. */
  z.object({ kind: z.literal('npy'), path: SourcePathSchema, field: z.string().min(1).max(128).default('x') }).strict(),
  /**
   * Several .npy files read side by side (features and labels saved apart), each a named field as `npy` names
   * one: `trainbench cache build x.npy:x y.npy:y`. Record counts must agree.
   */
  z.object({ kind: z.literal('npy-fields'), files: z.array(NpyFieldFileSchema).min(1).max(64) }).strict(),
  /** A NumPy .npz archive: one field per array. */
  z.object({ kind: z.literal('npz'), path: SourcePathSchema }).strict(),
  /**
   * Headerless dumps (ndarray.tofile()), read side by side: a file of one field with its dtype and per-record shape,
   * or a file of interleaved records (a structured dtype's tofile()) with its record layout.
   */
  z.object({ kind: z.literal('raw'), files: z.array(z.union([RawFieldFileSchema, RawRecordFileSchema])).min(1).max(64) }).strict(),
  /** CSV with a header row: numeric columns become `x`, the label column `y`. */
  z
    .object({
      kind: z.literal('csv'),
      path: SourcePathSchema,
      label: z.string().min(1).max(1024),
      labelDtype: z.enum(['int32', 'float32']).default('int32'),
    })
    .strict(),
  /** The built-in board dataset: positions labelled by a fixed random teacher network. */
  z.object({ kind: z.literal('synthetic-board'), records: z.number().int().min(1).max(MAX_BOARD_RECORDS), seed: z.number().int().min(0).default(0) }).strict(),
]);
export type SourceSpec = z.infer<typeof SourceSpecSchema>;
export type SourceSpecInput = z.input<typeof SourceSpecSchema>;

export const DEFAULT_SHARD_BYTES = 2 ** 30;

export const BuildRequestSchema = z
  .object({
    source: SourceSpecSchema,
    /** One folder-name segment (the cache id is `<name>-<12 hex>`), so never '..' or a hidden name. */
    name: IdSchema.max(64),
    shardBytes: z.number().int().min(4096).max(2 ** 40).default(DEFAULT_SHARD_BYTES),
    /** Rename or re-type source fields (e.g. float32 targets stored as float16); omitted fields are kept as they are. */
    fieldMap: z.array(z.object({ from: z.string().min(1).max(128), to: CacheFieldSchema.shape.name, dtype: CacheDTypeSchema }).strict()).max(256).default([]),
    /**
     * Holds out this share of the records, drawn by the seed, as a second cache named `<name>-test`: the
     * training part's test set (the same source, fraction and seed draw the same records again).
     */
    testSplit: TestSplitSchema.optional(),
    /** A job id chosen by the caller, so it can cancel; one is made up otherwise. */
    jobId: IdSchema.optional(),
  })
  .strict();
export type BuildRequest = z.infer<typeof BuildRequestSchema>;

export const BuildProgressSchema = z.object({
  jobId: z.string(),
  /** 'generating': the built-in example's positions are being made (before they are read and cached). */
  phase: z.enum(['generating', 'reading', 'checksumming', 'publishing', 'done']),
  records: z.number().int(),
  recordsTotal: z.number().int(),
  bytesWritten: z.number(),
  bytesTotal: z.number(),
  bytesPerSec: z.number(),
  etaSeconds: z.number().nullable(),
});
export type BuildProgress = z.infer<typeof BuildProgressSchema>;

export const DatasetSummarySchema = z.object({
  id: z.string(),
  name: z.string(),
  records: z.number().int(),
  bytes: z.number(),
  shards: z.number().int(),
  fields: z.array(CacheFieldSchema),
  createdAt: z.string(),
  sourceDescription: z.string(),
  /** null when the cache opens (structure checked, not checksums); the problem otherwise. */
  problem: z.string().nullable(),
  /** Set when the cache is one part of an import with a held-out test split: the training part names its test set in `other`. */
  split: HeldOutSplitSchema.optional(),
});
export type DatasetSummary = z.infer<typeof DatasetSummarySchema>;

/**
 * Why `test` cannot be `train`'s test set, naming the field and both values; null when it can. Every field the
 * model reads from the training set must be in the test set alike: name, dtype, per-record shape, and for a label
 * of text classes the same class names in the same order (index i must mean the same class in both).
 */
export function testSetProblem(
  train: { name: string; fields: { name: string; dtype: CacheDType; shape: number[]; classes?: string[] }[] },
  test: { name: string; fields: { name: string; dtype: CacheDType; shape: number[]; classes?: string[] }[] },
): string | null {
  for (const f of train.fields) {
    const t = test.fields.find((g) => g.name === f.name);
    if (!t) return `test set ${test.name} has no field '${f.name}' (it has: ${test.fields.map((g) => g.name).join(', ')}), which ${train.name} trains on`;
    if (t.dtype !== f.dtype || shapeWords(t.shape) !== shapeWords(f.shape)) {
      return `test set ${test.name} stores '${f.name}' as ${t.dtype}, shape ${shapeWords(t.shape)}, but ${train.name} as ${f.dtype}, shape ${shapeWords(f.shape)}: import both the same way`;
    }
    if (JSON.stringify(t.classes ?? null) !== JSON.stringify(f.classes ?? null)) {
      const words = (c: string[] | undefined) => (c ? `${c.length} text classes (${c.slice(0, 4).join(', ')}${c.length > 4 ? ', …' : ''})` : 'numbers');
      return `test set ${test.name} labels '${f.name}' with ${words(t.classes)} but ${train.name} with ${words(f.classes)}: the same index would mean another class; hold out a test split when importing instead`;
    }
  }
  return null;
}

export const BuildResultSchema = z.object({
  dataset: DatasetSummarySchema,
  /** True when a cache of the same source and settings was there already: nothing was built (of a split, for the training part). */
  hit: z.boolean(),
  seconds: z.number(),
  /** The cache's folder, relative to the workspace (datasets/<id>). */
  dir: z.string(),
  /** The held-out test split's cache, when the request asked for one (`dataset` is then the training part). */
  test: z.object({ dataset: DatasetSummarySchema, hit: z.boolean(), dir: z.string() }).optional(),
});
export type BuildResult = z.infer<typeof BuildResultSchema>;

export const VerifyResultSchema = z.object({ id: z.string(), ok: z.boolean(), problems: z.array(z.string()), seconds: z.number() });

export const InspectResultSchema = z.object({
  description: z.string(),
  records: z.number().int(),
  fields: z.array(z.object({ name: z.string(), dtype: CacheDTypeSchema, shape: z.array(z.number().int()), classes: z.array(z.string()).optional() })),
  /** The first records, each field's first values. */
  preview: z.array(z.record(z.string(), z.array(z.number()))),
  /** Whether the loader can read this source directly (for the cached vs uncached comparison). */
  uncached: z.object({ available: z.boolean(), reason: z.string().nullable() }),
});
export type InspectResult = z.infer<typeof InspectResultSchema>;

export const LoaderBenchRowSchema = z.object({
  workers: z.number().int(),
  prefetch: z.number().int(),
  samplesPerSec: z.number(),
  mbPerSec: z.number(),
  latencyP50Ms: z.number(),
  latencyP95Ms: z.number(),
  waitedFraction: z.number(),
  workerEfficiency: z.number(),
  batches: z.number().int(),
  seconds: z.number(),
});
export type LoaderBenchRow = z.infer<typeof LoaderBenchRowSchema>;

export const LoaderBenchRequestSchema = z
  .object({
    dataset: IdSchema,
    batchSize: z.number().int().min(1).max(1 << 20).default(256),
    workers: z.array(z.number().int().min(0).max(64)).min(1).max(8).default([0, 1, 2]),
    prefetch: z.array(z.number().int().min(1).max(64)).min(1).max(8).default([2]),
    sampleRatio: z.number().gt(0).max(1).default(1),
    /** Per setting. */
    maxSeconds: z.number().positive().max(60).default(2),
    /** Also read the dataset's source files directly, when they allow it. */
    uncached: z.boolean().default(true),
    /** "cuda:N" copies every batch to that GPU through the prefetch ring (pinned staging, copy stream). */
    device: z.string().default('cpu'),
    /** Depth of the GPU prefetch ring. */
    gpuPrefetch: z.number().int().min(1).max(16).default(3),
    /** A job id chosen by the caller, so it can follow progress and cancel; one is made up otherwise. */
    jobId: IdSchema.optional(),
  })
  .strict();
export type LoaderBenchRequest = z.infer<typeof LoaderBenchRequestSchema>;

/** Which files a loader setting reads: the cache's shards, or the dataset's source files in place. */
export const LoaderPathSchema = z.enum(['cached', 'uncached']);
export type LoaderPath = z.infer<typeof LoaderPathSchema>;

/**
 * Streamed while the loader benchmark runs, as `datasets.benchmarkProgress`: a setting starting
 * ('measuring', `row` null) and ending (`row` set), so a window shows the rows as they come.
 */
export const LoaderBenchProgressSchema = z.object({
  jobId: z.string(),
  runId: z.string(),
  phase: z.enum(['measuring', 'measured']),
  path: LoaderPathSchema,
  workers: z.number().int(),
  prefetch: z.number().int(),
  /** Settings measured so far, over both paths. */
  done: z.number().int(),
  /** Settings to measure over both paths; it drops when the source files turn out unreadable in place. */
  total: z.number().int(),
  /** How long one setting is measured (a Cancel takes effect when the one in flight ends). */
  maxSeconds: z.number(),
  /** The setting just measured, on 'measured'. */
  row: LoaderBenchRowSchema.nullable(),
});
export type LoaderBenchProgress = z.infer<typeof LoaderBenchProgressSchema>;

export const LoaderBenchResultSchema = z.object({
  dataset: z.string(),
  batchSize: z.number().int(),
  cached: z.array(LoaderBenchRowSchema),
  uncached: z.array(LoaderBenchRowSchema).nullable(),
  uncachedReason: z.string().nullable(),
  best: z.object({ workers: z.number().int(), prefetch: z.number().int() }),
  /** Measured while the benchmark ran. */
  telemetry: TelemetrySummarySchema,
});
export type LoaderBenchResult = z.infer<typeof LoaderBenchResultSchema>;

/** A CSV's header, read before the label column is chosen. */
export const CsvHeaderSchema = z.object({
  path: z.string(),
  columns: z.array(z.string()),
  /** The column most likely to be the label: one named label/target/y/class, else the last. */
  suggestedLabel: z.string(),
});
export type CsvHeader = z.infer<typeof CsvHeaderSchema>;

export const FileEntrySchema = z.object({ name: z.string(), path: z.string(), kind: z.enum(['file', 'dir']), bytes: z.number() });

/** A field's per-record shape as every page says it: "scalar" (one value a record, shape []), else "28×28". */
export function shapeWords(shape: readonly number[]): string {
  return shape.length ? shape.join('×') : 'scalar';
}

/**
 * A workspace dataset's name from its id ("flowers-3fa2c4d5e6f7" -> "flowers": ids are the name and 12 hex digits
 * of the source's fingerprint), for titles that have only the id; anything else is returned as it is.
 */
export function datasetNameOfId(id: string): string {
  const m = /^(.+)-[0-9a-f]{12}$/.exec(id);
  return m ? m[1] : id;
}

/** The records a loader draws per epoch at `sampleRatio`, as the engine counts them (ceil, at least one). */
export function recordsDrawn(records: number, sampleRatio: number): number {
  return Math.min(records, Math.max(1, Math.ceil(sampleRatio * records)));
}

/** The loader benchmark's batch for a dataset: `wanted`, or every record drawn when the dataset is smaller. */
export function loaderBenchBatch(records: number, sampleRatio: number, wanted = 256): number {
  return Math.max(1, Math.min(wanted, recordsDrawn(records, sampleRatio)));
}
