import { z } from 'zod';

import { IdSchema } from './ids';
import { ScriptOverridesSchema, ScriptTargetSchema } from './script-target';
import { ScriptRunPointSchema } from './train-result';

/** The longest a script run may be given: setTimeout's limit is about 24.8 days. */
export const MAX_SCRIPT_RUN_SECONDS = 24 * 24 * 3600;

/**
 * `train.run` on a script target: one whole training run of the user's command, recorded as a run
 * of kind `train` whose config.target is the script. No step bound unless maxSteps. Its result is
 * `train.run`'s one result (api/train-result.ts).
 */
export const ScriptTrainRequestSchema = z
  .object({
    target: ScriptTargetSchema,
    overrides: ScriptOverridesSchema.default({}),
    /** Optimizer steps after which the probe ends the script; absent: it trains to its own end. */
    maxSteps: z.number().int().min(1).max(1e12).optional(),
    /** Steps left out of the steady-state figures (the first steps compile, warm caches, start workers). */
    warmupSteps: z.number().int().min(0).max(1e9).default(5),
    /** The run is killed with its process group after this long. */
    timeoutSeconds: z.number().min(1).max(MAX_SCRIPT_RUN_SECONDS).default(7 * 24 * 3600),
    /** The job's id, which names its run too: chosen by the caller so it can follow its events and cancel it (jobs.cancel) from the start. */
    jobId: IdSchema.optional(),
  })
  .strict();
export type ScriptTrainRequest = z.infer<typeof ScriptTrainRequestSchema>;
export type ScriptTrainRequestInput = z.input<typeof ScriptTrainRequestSchema>;

/** `script.progress`: a script run's progress, at most ~10 per second. */
export const ScriptProgressEventSchema = ScriptRunPointSchema.extend({
  /** The run's job (its id names the run too). */
  jobId: z.string(),
  maxSteps: z.number().int().nullable(),
  /** Seconds since the command was started. */
  elapsedSeconds: z.number(),
});
export type ScriptProgressEvent = z.infer<typeof ScriptProgressEventSchema>;
