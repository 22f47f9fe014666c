// The optimisation wizard's result, either target (issue 39, as the benchmark's in ADR 0038): what every wizard
// measures and decides at the top, what only our engine or only a script's launches can tell inside `target`.
import { z } from 'zod';

import { DiagnosisSchema, EngineBaselineDetailSchema, LimitsSchema, OptimiseConfigSchema, OptimiseStatusSchema, StepsWidenedSchema, WizardResultSchema } from './optimise';
import type { Diagnosis, Limits } from './optimise';
import { ScriptLoaderSettingsSchema, ScriptTargetSchema } from './script-target';
import { olderResult, omit, pick, type Raw, withMedianLevel } from './target-upgrade';

const OverrideMapSchema = z.record(z.string(), z.union([z.number(), z.boolean(), z.string()]));

/** What only the engine's wizard has: the configurations it measured, the baseline's resources, its batch search. */
export const EngineWizardDetailSchema = z.object({
  kind: z.literal('engine'),
  baseline: EngineBaselineDetailSchema,
  final: z.object({ config: OptimiseConfigSchema }),
  /** What the batch-size search recommended for the batch-size candidate (null: not run). */
  batchSearch: z.object({ recommended: z.number().int().nullable(), runId: z.string().nullable(), verdict: z.string() }).nullable(),
  /** Set when the first baseline's window was too short and the steps per repetition were raised. */
  stepsWidened: StepsWidenedSchema.nullable().default(null),
});

/** What only a script's wizard has: the command, its own loader, the overrides measured and the loss guard. */
export const ScriptWizardDetailSchema = z.object({
  kind: z.literal('script'),
  command: ScriptTargetSchema,
  /** The script's own loader settings, before any override; null when it made no DataLoader. */
  loader: ScriptLoaderSettingsSchema.nullable(),
  /** The overrides the baseline ran with (the request's). */
  baseline: z.object({ overrides: OverrideMapSchema }),
  /** The overrides to run with (pass them as --set key=value); null in a stopped wizard's record. */
  final: z.object({ overrides: OverrideMapSchema }).nullable(),
  /** How the loss guard went (absent in runs from before it): the seed, who seeded, and why the loss could not be compared. */
  lossCheck: z
    .object({
      seed: z.number().int(),
      tolerance: z.number(),
      seededBy: z.enum(['trainbench', 'script']).nullable(),
      where: z.string().nullable(),
      unchecked: z.string().nullable(),
    })
    .optional(),
});
export type EngineWizardDetail = z.infer<typeof EngineWizardDetailSchema>;
export type ScriptWizardDetail = z.infer<typeof ScriptWizardDetailSchema>;

const OptimiseResultShape = WizardResultSchema.extend({
  /** The wizard's job (a script wizard's run has the same id). */
  jobId: z.string(),
  status: OptimiseStatusSchema,
  /** What bounds the step, from the baseline (null only in script runs recorded before it was kept). */
  diagnosis: DiagnosisSchema.nullable(),
  /** The floors the hardware sets (the engine measures them; null for a script). */
  limits: LimitsSchema.nullable(),
  target: z.discriminatedUnion('kind', [EngineWizardDetailSchema, ScriptWizardDetailSchema]),
});
export type OptimiseResult = z.infer<typeof OptimiseResultShape>;

const obj = (v: unknown): Raw => (typeof v === 'object' && v !== null ? (v as Raw) : {});
const ENGINE_BASELINE = Object.keys(EngineBaselineDetailSchema.shape);

/**
 * A result written before both wizards shared one shape: the engine's flat (no `target`; before that its job
 * was `optimiseId`), a script's with the command as `target` (its `command` a list) and no status, job or
 * diagnosis. Their own fields move into `target`; a result already in the shape passes as it is.
 */
function upgradeWizard(raw: unknown): unknown {
  const older = olderResult(raw);
  if (!older) return raw;
  const { r, oldScript } = older;
  const target = r.target as Raw | undefined;
  const baseline = r.baseline === null || r.baseline === undefined ? r.baseline : obj(r.baseline);
  const final = r.final === null || r.final === undefined ? r.final : obj(r.final);
  if (oldScript) {
    return {
      ...omit(r, ['target', 'loader', 'lossCheck']),
      jobId: r.jobId ?? r.runId,
      status: r.status ?? (final ? 'completed' : 'cancelled'),
      diagnosis: r.diagnosis ?? null,
      limits: r.limits ?? null,
      baseline: baseline ? omit(baseline, ['overrides']) : baseline,
      final: final ? omit(final, ['overrides']) : final,
      target: {
        kind: 'script',
        command: target,
        loader: r.loader ?? null,
        baseline: { overrides: baseline?.overrides ?? {} },
        final: final ? { overrides: final.overrides } : null,
        ...(r.lossCheck !== undefined ? { lossCheck: r.lossCheck } : {}),
      },
    };
  }
  const { optimiseId, ...rest } = r;
  return {
    ...omit(rest, ['batchSearch', 'stepsWidened']),
    jobId: r.jobId ?? optimiseId,
    baseline: baseline ? omit(baseline, ENGINE_BASELINE) : baseline,
    final: final ? omit(final, ['config']) : final,
    target: {
      kind: 'engine',
      baseline: baseline ? pick(baseline, ENGINE_BASELINE) : undefined,
      final: final ? { config: final.config } : undefined,
      batchSearch: r.batchSearch ?? null,
      stepsWidened: r.stepsWidened ?? null,
    },
  };
}

/** upgradeWizard's result with its baseline's median interval at its true level (withMedianLevel). */
function withBaselineLevel(raw: unknown): unknown {
  const r = upgradeWizard(raw);
  if (typeof r !== 'object' || r === null) return r;
  const baseline = (r as Raw).baseline;
  return baseline ? { ...(r as Raw), baseline: withMedianLevel(baseline, 'samplesPerSec') } : r;
}

/** The wizard's result, either target (older run files are read through upgradeWizard). */
export const OptimiseResultSchema = z.preprocess(withBaselineLevel, OptimiseResultShape);

/**
 * What a script optimisation's run.json keeps when it stopped early (cancelled or failed): the baseline once
 * measured, every finished trial, no final.
 */
export const OptimiseRecordSchema = z.preprocess(
  withBaselineLevel,
  OptimiseResultShape.extend({ baseline: OptimiseResultShape.shape.baseline.nullable(), final: OptimiseResultShape.shape.final.nullable() }),
);
export type OptimiseRecord = z.infer<typeof OptimiseRecordSchema>;

/** The engine wizard's result: its diagnosis and limits are always measured. */
export type EngineOptimiseResult = Omit<OptimiseResult, 'target' | 'diagnosis' | 'limits'> & { target: EngineWizardDetail; diagnosis: Diagnosis; limits: Limits };
/** A script wizard's result. */
export type ScriptOptimiseResult = Omit<OptimiseResult, 'target'> & { target: ScriptWizardDetail };
export type ScriptOptimiseRecord = Omit<OptimiseRecord, 'target'> & { target: ScriptWizardDetail };

export function isEngineOptimise(r: OptimiseResult): r is EngineOptimiseResult {
  return r.target.kind === 'engine' && r.diagnosis !== null && r.limits !== null;
}
export function isScriptOptimise(r: OptimiseResult): r is ScriptOptimiseResult {
  return r.target.kind === 'script';
}
