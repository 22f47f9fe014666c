import { z } from 'zod';

import { IdSchema } from './ids';
import { ModelSpecSchema } from './model-spec';
import { DataSourceSchema, MemoryBreakdownSchema, TrainOptionsSchema } from './training';

/** Memory kept free by default: a batch that fills the device to the last byte fails later (fragmentation, other tenants). */
export const DEFAULT_HEADROOM = 0.1;

/**
 * Two fitting batches whose samples/s differ by less than this fraction are a tie (the trial-to-trial
 * noise of a few-step run); the search recommends the smallest batch within it of the fastest (ADR 0034).
 */
export const THROUGHPUT_NOISE = 0.05;

export const BatchSearchRequestSchema = z
  .object({
    spec: ModelSpecSchema,
    data: DataSourceSchema,
    /** The training settings every trial uses (device, optimizer, memoryLimitBytes on the CPU ...); batchSize is the one being searched. */
    options: TrainOptionsSchema.default(TrainOptionsSchema.parse({})),
    /** Fraction of the device memory (on the CPU: of memoryLimitBytes) that the chosen batch leaves free. */
    headroom: z.number().min(0).max(0.9).default(DEFAULT_HEADROOM),
    /** Optimizer steps measured per trial. */
    stepsPerTrial: z.number().int().min(2).max(1000).default(5),
    /** Keep this global batch: find the micro-batch that fits and the gradient accumulation that makes it up. */
    globalBatch: z.number().int().min(1).max(1 << 24).optional(),
    /** Chosen by the caller so it can cancel before the first trial arrives; made up otherwise (it names the search's run). */
    jobId: IdSchema.optional(),
  })
  .strict();
export type BatchSearchRequest = z.infer<typeof BatchSearchRequestSchema>;
export type BatchSearchRequestInput = z.input<typeof BatchSearchRequestSchema>;

/** ok: it trained; E_OOM: the engine ran out of memory (a data point, not a failure); crash: the engine host died and was restarted. */
export const TrialOutcomeSchema = z.enum(['ok', 'E_OOM', 'crash']);
/** A trial's outcome as a person reads it (the code stays in the JSON). */
export const TRIAL_OUTCOME_WORDS = { ok: 'trained', E_OOM: 'out of memory', crash: 'killed' } as const satisfies Record<z.infer<typeof TrialOutcomeSchema>, string>;
export type TrialOutcome = z.infer<typeof TrialOutcomeSchema>;

export const BatchTrialSchema = z.object({
  index: z.number().int().min(0),
  batchSize: z.number().int().min(1),
  accumulation: z.number().int().min(1),
  outcome: TrialOutcomeSchema,
  /** Steady-state training samples per second, the cold first step left out; null unless the trial trained and timed a step after its first (message says why). */
  samplesPerSec: z.number().nullable(),
  /** The engine's memory model at this batch, before the trial ran. */
  predicted: MemoryBreakdownSchema,
  /** The most bytes the trial's buffers held at once; null unless it trained. */
  peakBytes: z.number().nullable(),
  /** Trained, and its peak leaves the headroom free. */
  fits: z.boolean(),
  seconds: z.number(),
  /** The engine's words for an OOM or a crash; for a trial that trained without samples/s, why. */
  message: z.string().nullable(),
  /** The engine's training-buffer bytes before and after the trial: equal when every buffer was freed. */
  memoryBeforeBytes: z.number(),
  memoryAfterBytes: z.number(),
  backAtBaseline: z.boolean(),
});
export type BatchTrial = z.infer<typeof BatchTrialSchema>;

export const BatchSearchResultSchema = z.object({
  runId: z.string(),
  runDir: z.string(),
  device: z.string(),
  /** The memory the search fills: the device's, or memoryLimitBytes on the CPU. */
  capacityBytes: z.number(),
  capacitySource: z.enum(['memory-limit', 'device']),
  headroom: z.number(),
  /** capacityBytes less the headroom: what a fitting batch may use. */
  usableBytes: z.number(),
  /** The largest power of two the memory model says fits: where the search started (the user's batch and its doublings below it are measured after). */
  seedBatch: z.number().int(),
  /** Largest batch measured to fit under the headroom; null when none did. */
  largestFitting: z.number().int().nullable(),
  /** The smallest fitting batch within the noise (THROUGHPUT_NOISE) of the best samples/s: the least recipe change that gets the speed (ADR 0034). */
  recommended: z.number().int().nullable(),
  /** Most samples the training data gives one step (records drawn per epoch). */
  maxBatch: z.number().int(),
  trials: z.array(BatchTrialSchema),
  globalBatch: z
    .object({ global: z.number().int(), microBatch: z.number().int(), accumulation: z.number().int(), samplesPerSec: z.number().nullable() })
    .nullable(),
  verdict: z.string(),
  seconds: z.number(),
  data: z.string(),
});
export type BatchSearchResult = z.infer<typeof BatchSearchResultSchema>;

/** A trial as it finishes, for live views. */
export const BatchTrialEventSchema = z.object({ jobId: z.string(), trial: BatchTrialSchema });
export type BatchTrialEvent = z.infer<typeof BatchTrialEventSchema>;

/**
 * Where a search stands, so a view has something to show before the first trial ends (each can take
 * seconds): 'preparing' (the data read or cached, the memory model asked) before any trial, then
 * 'trial' as each trial starts and, throttled, as its steps go by.
 */
export const BatchSearchProgressSchema = z.object({
  jobId: z.string(),
  phase: z.enum(['preparing', 'trial']),
  /** The trial running (its index as in BatchTrial, from 0); null while preparing. */
  trial: z.object({ index: z.number().int().min(0), batchSize: z.number().int().min(1), accumulation: z.number().int().min(1) }).nullable(),
  /** Optimizer steps the running trial has done, of `steps`. */
  step: z.number().int().min(0),
  steps: z.number().int().min(1),
  /** Seconds since the search started, and since the running trial started. */
  elapsedSeconds: z.number().min(0),
  trialSeconds: z.number().min(0),
});
export type BatchSearchProgress = z.infer<typeof BatchSearchProgressSchema>;
