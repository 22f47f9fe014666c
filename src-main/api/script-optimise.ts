import { z } from 'zod';

import { OptimiseTrialSchema } from './optimise';
import { ScriptLoaderSettingsSchema, ScriptOptimiseResultSchema } from './script-target';

/**
 * A script wizard's baseline, sent as soon as it is measured: the wizard's result comes only at its
 * end, and a person watching its trials wants the numbers they are measured against.
 */
export const ScriptOptimiseBaselineEventSchema = z.object({
  /** The wizard's job (its optimise.progress events carry it as optimiseId). */
  jobId: z.string(),
  runId: z.string(),
  baseline: ScriptOptimiseResultSchema.shape.baseline,
  /** The script's own first DataLoader, before overrides; null when it made none. */
  loader: ScriptLoaderSettingsSchema.nullable(),
  /** The finished trials a resumed wizard keeps from the run it goes on from (none for a fresh one). */
  trials: z.array(OptimiseTrialSchema),
});
export type ScriptOptimiseBaselineEvent = z.infer<typeof ScriptOptimiseBaselineEventSchema>;
