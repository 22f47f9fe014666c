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

/** What only the engine tells of a trial: its memory model's prediction and its training buffers around the trial. */
export const EngineTrialDetailSchema = z.object({
  kind: z.literal('engine'),
  /** The engine's memory model at this batch, before the trial ran. */
  predicted: MemoryBreakdownSchema,
  /** The engine's training-buffer bytes before and after the trial: equal when every buffer was freed. */
  memoryBeforeBytes: z.number(),
  memoryAfterBytes: z.number(),
  backAtBaseline: z.boolean(),
  /**
   * On the CPU, the engine process's most resident bytes during the trial as the OS counted them (the Node runtime
   * and the mapped dataset included): there `peakBytes` is the engine's own accounting, sized by the same rules as
   * its prediction, so this is what was measured. Null on a CUDA device, where the OS cannot reset the peak, and in older runs.
   */
  processPeakRssBytes: z.number().nullable().default(null),
});
/** A script's trial has nothing of its own: torch's allocator is not ours to predict or account. */
export const ScriptTrialDetailSchema = z.object({ kind: z.literal('script') });

/** One trial of a search, either target: the same fields, what only one target knows inside `target`. */
export const BatchTrialSchema = z.object({
  index: z.number().int().min(0),
  batchSize: z.number().int().min(1),
  /** Micro-batches per optimizer step (the engine's global-batch check; a script's trials are 1). */
  accumulation: z.number().int().min(1),
  outcome: TrialOutcomeSchema,
  /** Steady-state training samples per second, the cold first step left out; null unless the trial trained and timed a step after its first (message says why). */
  samplesPerSec: z.number().nullable(),
  /** The most bytes the trial held at once (the engine's buffers; a script's CUDA peak); null unless it trained and it was measured (a script on the CPU). */
  peakBytes: z.number().nullable(),
  /** Trained, and its peak leaves the headroom free. */
  fits: z.boolean(),
  seconds: z.number(),
  /** The target's words for an OOM or a crash; for a trial that trained without samples/s, why. */
  message: z.string().nullable(),
  target: z.discriminatedUnion('kind', [EngineTrialDetailSchema, ScriptTrialDetailSchema]),
});
export type BatchTrial = z.infer<typeof BatchTrialSchema>;

/** What only the engine's search has: the memory model's seed, the capacity's source, the data's limit, the global batch's split. */
export const EngineSearchDetailSchema = z.object({
  kind: z.literal('engine'),
  data: z.string(),
  capacitySource: z.enum(['memory-limit', 'device']),
  /** capacityBytes less the headroom: what a fitting batch may use. */
  usableBytes: z.number(),
  /** The largest power of two the memory model says fits: where the search started (the user's batch and its doublings below it are measured after). */
  seedBatch: z.number().int(),
  /** Most samples the training data gives one step (records drawn per epoch). */
  maxBatch: z.number().int(),
  globalBatch: z
    .object({ global: z.number().int(), microBatch: z.number().int(), accumulation: z.number().int(), samplesPerSec: z.number().nullable() })
    .nullable(),
});
/** A script's search: its command is in the run's config; nothing else is its own. */
export const ScriptSearchDetailSchema = z.object({ kind: z.literal('script') });

const BatchSearchShape = z.object({
  runId: z.string(),
  runDir: z.string(),
  /** "mlp on fashion-mnist-train (60000 records)", or the script's command. */
  title: z.string(),
  device: z.string(),
  /** The memory the search fills: the device's, or memoryLimitBytes on the CPU; null for a script on the CPU (a batch fits when it trains). */
  capacityBytes: z.number().nullable(),
  headroom: z.number(),
  /** Largest batch measured to fit under the headroom; null when none did. */
  largestFitting: z.number().int().nullable(),
  /** The smallest fitting batch within the noise (THROUGHPUT_NOISE) of the best samples/s: the least recipe change that gets the speed (ADR 0034). */
  recommended: z.number().int().nullable(),
  trials: z.array(BatchTrialSchema),
  verdict: z.string(),
  seconds: z.number(),
  target: z.discriminatedUnion('kind', [EngineSearchDetailSchema, ScriptSearchDetailSchema]),
  /**
   * A search cancelled after this many finished trials: the answer is theirs only (larger batches it had not
   * reached were not tried), kept in the cancelled run so it can be shown and written up. Null for a whole search.
   */
  cancelledAfterTrials: z.number().int().nonnegative().nullable().default(null),
});

/** A search's result as written before both targets shared one shape (ADR 0038): the engine's flat, a script's without `target`. */
function upgradeSearch(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || 'target' in raw) return raw;
  const r = raw as Record<string, unknown>;
  const trials = Array.isArray(r.trials) ? r.trials : [];
  if ('capacitySource' in r) {
    const { data, capacitySource, usableBytes, seedBatch, maxBatch, globalBatch, ...rest } = r;
    return {
      ...rest,
      title: typeof r.title === 'string' ? r.title : String(data),
      target: { kind: 'engine', data, capacitySource, usableBytes, seedBatch, maxBatch, globalBatch },
      trials: trials.map((t: Record<string, unknown>) => {
        const { predicted, memoryBeforeBytes, memoryAfterBytes, backAtBaseline, ...common } = t;
        return 'target' in t ? t : { ...common, target: { kind: 'engine', predicted, memoryBeforeBytes, memoryAfterBytes, backAtBaseline } };
      }),
    };
  }
  const { cudaTotalBytes, ...rest } = r;
  return {
    ...rest,
    capacityBytes: cudaTotalBytes ?? null,
    target: { kind: 'script' },
    trials: trials.map((t: Record<string, unknown>) => {
      const { cudaPeakBytes, ...common } = t;
      return 'target' in t ? t : { ...common, accumulation: 1, peakBytes: cudaPeakBytes ?? null, target: { kind: 'script' } };
    }),
  };
}

/** A batch-size search's result, either target (older run files are read through upgradeSearch). */
export const BatchSearchResultSchema = z.preprocess(upgradeSearch, BatchSearchShape);
export type BatchSearchResult = z.infer<typeof BatchSearchShape>;
export type EngineSearchDetail = z.infer<typeof EngineSearchDetailSchema>;

/** What a fitting batch may hold: the capacity less the headroom; null where nothing caps it (a script on the CPU: a batch fits when it trains). */
export function usableBytesOf(r: Pick<BatchSearchResult, 'capacityBytes' | 'headroom' | 'target'>): number | null {
  if (r.capacityBytes === null) return null;
  return r.target.kind === 'engine' ? r.target.usableBytes : r.capacityBytes * (1 - r.headroom);
}
export type EngineTrialDetail = z.infer<typeof EngineTrialDetailSchema>;

/** A trial as it finishes, for live views. */
export const BatchTrialEventSchema = z.object({ jobId: z.string(), runId: z.string(), trial: BatchTrialSchema });
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
