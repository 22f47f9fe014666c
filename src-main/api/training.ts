import { z } from 'zod';

import { IdSchema } from './ids';
import { ModelSpecSchema } from './model-spec';
import { RunAnnotationSchema } from './run-notes';
import { StoredRunStatusSchema } from './run-record';
import { TargetKindSchema } from './target';
import { TelemetrySampleSchema } from './telemetry';

/**
 * The shortest interval between step events a request may ask for: at most
 * ~50 events/s per run (docs/architecture.md: progress is throttled), so no client can make
 * the engine host, the run's events.jsonl and every connected UI carry an
 * event per micro-step (an attack flooded them at interval 0). Tests that need
 * every step call the engine directly.
 */
export const MIN_EVENT_INTERVAL_MS = 20;

export const OptimizerSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('sgd'),
      lr: z.number().positive().max(10).default(0.01),
      momentum: z.number().min(0).lt(1).default(0.9),
      weightDecay: z.number().min(0).max(1).default(1e-4),
    })
    .strict(),
  z
    .object({
      kind: z.literal('adamw'),
      lr: z.number().positive().max(10).default(1e-3),
      weightDecay: z.number().min(0).max(1).default(1e-2),
      beta1: z.number().min(0).lt(1).default(0.9),
      beta2: z.number().min(0).lt(1).default(0.999),
      eps: z.number().positive().max(1).default(1e-8),
    })
    .strict(),
]);

export const ScheduleSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('constant') }).strict(),
  z
    .object({
      kind: z.literal('warmup_cosine'),
      warmupSteps: z.number().int().min(0).default(0),
      minLr: z.number().min(0).default(0),
    })
    .strict(),
]);

export const TrainOptionsSchema = z
  .object({
    /** Samples per micro-batch. */
    batchSize: z.number().int().min(1).max(1 << 20).default(64),
    /** Micro-batches per optimizer step: the same update as one batch of batchSize * accumulation. */
    accumulation: z.number().int().min(1).max(4096).default(1),
    epochs: z.number().int().min(1).max(100_000).default(1),
    /** Stop after this many optimizer steps (0: all). */
    maxSteps: z.number().int().min(0).default(0),
    /** Steps before the steady-state clock starts (benchmarks name it); absent: min(5, total steps / 10). */
    warmupSteps: z.number().int().min(0).max(2 ** 40).optional(),
    /** Fraction of the training set drawn each epoch. */
    sampleRatio: z.number().gt(0).max(1).default(1),
    shuffle: z.boolean().default(true),
    /** Clip gradients to this global L2 norm (0: off). */
    clipNorm: z.number().min(0).default(0),
    /** Samples per evaluation batch; absent: the training batch, so evaluation needs no more memory than a step. */
    evalBatchSize: z.number().int().min(1).max(1 << 20).optional(),
    /** Minimum interval between step events (the engine emits at most ~20/s by default). */
    eventIntervalMs: z.number().min(MIN_EVENT_INTERVAL_MS).max(3_600_000).default(50),
    seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
    /** CPU threads; 0 uses every core. */
    threads: z.number().int().min(0).max(1024).default(0),
    /**
     * 'cpu', 'cuda', 'cuda:N', or 'auto' (the first GPU when there is one, else the CPU). Checked here, not only by the
     * engine: a saved wizard state is a workspace file, and a planted device reached the terminal inside the engine's
     * refusal (re-attack of issue 41's F1); this refusal names the field, never the value.
     */
    device: z
      .string()
      .regex(/^(cpu|auto|cuda(:\d{1,4})?)$/, "must be 'cpu', 'cuda', 'cuda:N' or 'auto'")
      .default('cpu'),
    /** Mixed precision on CUDA: bf16 or fp16 compute with fp32 master weights (fp16 adds dynamic loss scaling). */
    precision: z.enum(['fp32', 'bf16', 'fp16']).default('fp32'),
    /** CUDA phase timing: 'default' records events without stalling the step; 'measure' synchronises per phase. */
    phaseTiming: z.enum(['default', 'measure']).default('default'),
    /** CUDA: capture the training step once and replay it (accumulation 1, fixed shapes). */
    cudaGraph: z.boolean().default(false),
    /** CUDA: batches copied ahead into device buffers on a copy stream. */
    gpuPrefetch: z.number().int().min(1).max(16).default(3),
    /** Loader threads gathering batches ahead of the step, and how many batches they may prepare. */
    loaderWorkers: z.number().int().min(0).max(256).default(1),
    prefetch: z.number().int().min(1).max(256).default(2),
    /**
     * CPU: caps the engine's training allocations at this many bytes, as a GPU's memory would
     * (beyond it a run fails with E_OOM naming the bytes requested and free); 0: no cap.
     */
    memoryLimitBytes: z.number().int().min(0).max(2 ** 50).default(0),
    optimizer: OptimizerSchema.default({ kind: 'sgd', lr: 0.01, momentum: 0.9, weightDecay: 1e-4 }),
    schedule: ScheduleSchema.default({ kind: 'constant' }),
  })
  .strict();
export type TrainOptions = z.infer<typeof TrainOptionsSchema>;
export type TrainOptionsInput = z.input<typeof TrainOptionsSchema>;

/** Where training data comes from: always read through the dataset cache and the native loader. */
export const IdxPairSchema = z.object({ images: z.string().min(1), labels: z.string().min(1) }).strict();
export const DataSourceSchema = z.discriminatedUnion('kind', [
  /** Debian's dataset-fashion-mnist (or the same four files in `dir`), cached on first use. */
  z.object({ kind: z.literal('fashion-mnist'), dir: z.string().min(1).max(4096).optional() }).strict(),
  /** MNIST-style IDX image/label pairs, cached on first use. */
  z.object({ kind: z.literal('idx'), train: IdxPairSchema, test: IdxPairSchema.optional() }).strict(),
  /** The built-in board dataset (positions labelled by a fixed teacher network), created on first use. */
  z.object({ kind: z.literal('example-board') }).strict(),
  /** Caches already in the workspace, by id or name. */
  z.object({ kind: z.literal('dataset'), train: IdSchema, test: IdSchema.optional() }).strict(),
]);
export type DataSource = z.infer<typeof DataSourceSchema>;

export const TrainRequestSchema = z
  .object({
    spec: ModelSpecSchema,
    data: DataSourceSchema,
    options: TrainOptionsSchema.default(TrainOptionsSchema.parse({})),
    /** The job's id, which names its run too: chosen by the caller (newJobId) to follow its events and cancel from the start; made up otherwise. */
    jobId: IdSchema.optional(),
  })
  .strict();
export type TrainRequest = z.infer<typeof TrainRequestSchema>;

/** Milliseconds per optimizer step by phase, as the engine times them. */
export const PhasesSchema = z.object({
  data: z.number(),
  /** Host-to-device copies the step waited for (0 on the CPU; runs recorded before it existed read as 0). */
  h2d: z.number().default(0),
  forward: z.number(),
  loss: z.number(),
  backward: z.number(),
  optimizer: z.number(),
});

/** When the event was recorded (ms since 1970), so curves can use a time axis; absent in runs recorded before it existed. */
const EventTimeSchema = z.number().optional();

export const TrainStepEventSchema = z.object({
  type: z.literal('step'),
  t: EventTimeSchema,
  epoch: z.number().int(),
  epochs: z.number().int(),
  step: z.number().int(),
  stepsPerEpoch: z.number().int(),
  globalStep: z.number().int(),
  totalSteps: z.number().int(),
  /** Mean training loss over the steps since the last event. */
  loss: z.number(),
  accuracy: z.number().nullable(),
  lr: z.number(),
  gradNorm: z.number(),
  samplesPerSec: z.number(),
  /** Mean milliseconds per optimizer step in each phase since the last event. */
  phasesMs: PhasesSchema,
  /** fp16 only: the dynamic loss scale, and steps skipped for inf/nan gradients since the last event. */
  lossScale: z.number().optional(),
  skippedSteps: z.number().int().optional(),
});
export const TrainEpochEventSchema = z.object({
  type: z.literal('epoch'),
  t: EventTimeSchema,
  epoch: z.number().int(),
  epochs: z.number().int(),
  seconds: z.number(),
  trainLoss: z.number(),
  trainAccuracy: z.number().nullable(),
  testLoss: z.number().optional(),
  testAccuracy: z.number().nullable().optional(),
});
export const TrainEventSchema = z.discriminatedUnion('type', [TrainStepEventSchema, TrainEpochEventSchema]);
export type TrainStepEvent = z.infer<typeof TrainStepEventSchema>;
export type TrainEvent = z.infer<typeof TrainEventSchema>;

export const MemoryBreakdownSchema = z.object({
  weights: z.number(),
  gradients: z.number(),
  optimizerState: z.number(),
  activations: z.number(),
  activationGrads: z.number(),
  batchData: z.number(),
  workspace: z.number(),
  total: z.number(),
});

export type MemoryBreakdown = z.infer<typeof MemoryBreakdownSchema>;

/** The engine process's resident memory over a run, as the OS counts it (the engine's own accounting is `memory`). */
export const ProcessMemorySchema = z.object({
  /** The most resident bytes during the run ('run'), or over the process's life where the OS cannot reset the peak ('process'). */
  peakRssBytes: z.number(),
  scope: z.enum(['run', 'process']),
  /** At the run's end: resident file pages (memory-mapped dataset caches, the addon), shared with the page cache; null where the OS does not say. */
  fileRssBytes: z.number().nullable(),
});
export type ProcessMemory = z.infer<typeof ProcessMemorySchema>;

/**
 * What the native trainer answers at a run's end (the engine runner turns it into `train.run`'s result,
 * api/train-result.ts); benchmarks and batch trials read parts of it.
 */
export const EngineTrainSummarySchema = z.object({
  steps: z.number().int(),
  samples: z.number().int(),
  seconds: z.number(),
  threads: z.number().int(),
  /** Training samples per second of wall-clock time, warm-up and evaluation included. */
  samplesPerSec: z.number(),
  stepTime: z.object({
    /** Every step, warm-up and evaluation included. */
    wallClockMeanMs: z.number(),
    /** Steps after the first `warmupSteps`, evaluation excluded; null when too few steps ran. */
    steadyStateMeanMs: z.number().nullable(),
    warmupSteps: z.number().int(),
    note: z.string(),
  }),
  phasesMs: PhasesSchema,
  /** The device, precision and how phases were timed. */
  backend: z
    .object({ device: z.string(), precision: z.string(), timing: z.string() })
    .passthrough()
    .optional(),
  skippedSteps: z.number().int().optional(),
  lossScale: z.number().optional(),
  epochs: z.array(TrainEpochEventSchema),
  test: z
    .object({
      loss: z.number(),
      accuracy: z.number().nullable(),
      samples: z.number().int(),
      headLosses: z.record(z.string(), z.number()),
    })
    .optional(),
  model: z.object({ family: z.string(), params: z.number().int(), flopsPerSample: z.number() }),
  /** Bytes by kind: predicted from the model's shapes and settings, and measured from the engine's allocations. */
  memory: z.object({
    predicted: MemoryBreakdownSchema,
    measured: MemoryBreakdownSchema,
    device: z.string(),
    /** CPU: the most bytes the run's buffers held at once (what a memory limit is checked against). */
    peakBytes: z.number().optional(),
    limitBytes: z.number().optional(),
  }),
  /** The engine process's resident memory (beside the engine's own accounting in `memory`); absent in runs recorded before. */
  processMemory: ProcessMemorySchema.optional(),
});
export type EngineTrainSummary = z.infer<typeof EngineTrainSummarySchema>;

/** A training run's step and epoch events; its job's id is its run's id. */
export const TrainProgressEventSchema = z.object({ jobId: z.string(), event: TrainEventSchema });

/**
 * Before a run's first step: its data being cached ('generating', 'reading', 'checksumming',
 * 'publishing', as datasets.progress names them) and the engine checking the request
 * ('checking'). A run can be cancelled from the first of these on.
 */
export const TrainPreparingEventSchema = z.object({
  jobId: z.string(),
  stage: z.enum(['generating', 'reading', 'checksumming', 'publishing', 'done', 'checking']),
  /** Share of the stage done, 0..1; null when unknown. */
  fraction: z.number().min(0).max(1).nullable(),
});
export type TrainPreparingEvent = z.infer<typeof TrainPreparingEventSchema>;

/**
 * A run's status as the Runs list shows it: the stored one, or `interrupted` for
 * a `running` record whose owner process is gone, or `unreadable` for a run.json
 * that cannot be read (the reason is in `problem`).
 */
export const RunStatusSchema = z.enum([...StoredRunStatusSchema.options, 'interrupted', 'unreadable']);
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** The last step event a run recorded in events.jsonl. */
/** How far a run got; a script run knows its optimizer steps but not its epochs or its total (null). */
export const RunLastStepSchema = z.object({
  epoch: z.number().int().nullable(),
  epochs: z.number().int().nullable(),
  globalStep: z.number().int(),
  totalSteps: z.number().int().nullable(),
});
export type RunLastStep = z.infer<typeof RunLastStepSchema>;

/** "at step 1,234 of 9,370 (epoch 2/10)", or "at step 1,234" for a script: how far an unfinished run got, worded once for the CLI and the UI. */
export function lastStepText(step: RunLastStep | null): string {
  if (!step) return 'before its first step';
  const n = (x: number) => x.toLocaleString('en-US');
  const of = step.totalSteps !== null ? ` of ${n(step.totalSteps)}` : '';
  const epoch = step.epoch !== null && step.epochs !== null ? ` (epoch ${step.epoch}/${step.epochs})` : '';
  return `at step ${n(step.globalStep)}${of}${epoch}`;
}

/**
 * An optimisation's wizard as the Runs list names it (kind optimise): its id in the Optimise area (the engine
 * wizard's job id; a script wizard's run id) and, while it is unfinished, how far its saved state got.
 */
export const RunWizardSchema = z.object({
  id: z.string(),
  /** Whether the baseline is measured, and the trials finished (null: the saved state was not read, or there is none yet). */
  baselineDone: z.boolean().nullable(),
  trialsDone: z.number().int().nullable(),
  /** The most trials it may try, as its request says (null when its request does not). */
  maxTrials: z.number().int().nullable(),
});
export type RunWizard = z.infer<typeof RunWizardSchema>;

/**
 * "measuring its baseline", "2 of at most 3 trials done": how far an unfinished optimisation got, from its saved
 * state, in the wizard's own words rather than a training run's steps (issue 41 item 4).
 */
export function wizardProgressText(w: RunWizard | null | undefined): string {
  if (!w || w.baselineDone === null) return 'its saved state cannot be read';
  if (!w.baselineDone) return 'measuring its baseline';
  const most = w.maxTrials !== null ? ` of at most ${w.maxTrials}` : '';
  return `baseline measured, ${w.trialsDone ?? 0}${most} trials done`;
}

/** One line of the Runs list, read from runs/<id>/run.json. */
export const RunSummarySchema = z.object({
  id: z.string(),
  kind: z.string(),
  status: RunStatusSchema,
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
  /** e.g. "cnn on fashion-mnist-train (60000 records)" */
  title: z.string(),
  testAccuracy: z.number().nullable(),
  samplesPerSec: z.number().nullable(),
  gpuUtilizationMean: z.number().nullable(),
  error: z.string().nullable(),
  /** Running and interrupted runs: how far they got (null before the first step event). */
  lastStep: RunLastStepSchema.nullable(),
  /** Why an interrupted run is called so, e.g. "process 4242 on rig-1 is gone". */
  interruption: z.string().nullable(),
  /** Set when run.json cannot be read: the run is listed with the problem, never dropped. */
  problem: z.string().nullable(),
  /** Whose training it measured: our engine or the user's own command (absent from older servers). */
  target: TargetKindSchema.optional(),
  /** An optimisation's wizard: the id the Optimise area lists it under, and how far it got (absent for other kinds and older servers). */
  wizard: RunWizardSchema.optional(),
  /** The name, tags and notes a person gave the run (runs/<id>/notes.json); absent when none were given. */
  annotation: RunAnnotationSchema.optional(),
  /** Why notes.json was not read (damaged, too large, a link), when it was not. */
  annotationProblem: z.string().optional(),
  /** A cancelled run that kept the answer of its finished part (a batch-size search's trials): it opens as a completed one does. */
  partialResult: z.literal(true).optional(),
});
export type RunSummary = z.infer<typeof RunSummarySchema>;

export const RunDetailSchema = z.object({
  summary: RunSummarySchema,
  /** run.json as stored (config, environment, result or error). */
  record: z.unknown(),
  /** Progress events in order (step events thinned to at most 2,000). */
  events: z.array(TrainEventSchema),
  /** The GPU and host telemetry the run recorded, thinned evenly to at most 2,000 samples (absent from older servers). */
  telemetry: z.array(TelemetrySampleSchema).default([]),
  /** Files too large to read whole (a huge or planted events or telemetry file): read in evenly spread windows, and why. */
  cut: z.array(z.object({ file: z.string(), sizeBytes: z.number(), readBytes: z.number(), note: z.string() })).optional(),
});
export type RunDetail = z.infer<typeof RunDetailSchema>;

/**
 * Records the loader draws per epoch: ceil(records x sampleRatio), at least 1 and at most all,
 * exactly as the engine's loader does (native/src/data/loader.cpp; test/native/loader.test.ts holds
 * the two together). Every step count, batch limit and epoch estimate starts from this one number.
 */
export function recordsPerEpoch(records: number, sampleRatio: number): number {
  return Math.min(records, Math.max(1, Math.ceil(sampleRatio * records)));
}
