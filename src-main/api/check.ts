import { z } from 'zod';

import { IdSchema } from './ids';

/** The regression gate's verdict (trainbench check, and Compare between two benchmark runs). */
export const GateVerdictSchema = z.object({
  outcome: z.enum(['faster', 'same', 'slower', 'undecided']),
  /** 0: faster, or the same within the tolerance; 1: slower beyond it; 2: could not decide. */
  exitCode: z.union([z.literal(0), z.literal(1), z.literal(2)]),
  /** Median samples/s of the second over the first, with its interval (95%, or its true coverage over few repetitions); null where none could be given. */
  change: z.object({ low: z.number(), median: z.number(), high: z.number(), coverage: z.number().min(0).max(1).optional() }).nullable(),
  tolerance: z.number(),
  text: z.string(),
});
export type GateVerdict = z.infer<typeof GateVerdictSchema>;
export type GateOutcome = GateVerdict['outcome'];

/** A benchmark run the gate compares: its id, its title and each repetition's samples/s. */
export const CheckedRunSchema = z.object({ runId: z.string(), title: z.string(), createdAt: z.string(), samplesPerSec: z.array(z.number()) });
export type CheckedRun = z.infer<typeof CheckedRunSchema>;

export const CheckResultSchema = z.object({
  against: CheckedRunSchema,
  now: CheckedRunSchema,
  /** What differs between the machines or devices of the two measurements: any makes the verdict undecided. */
  differences: z.array(z.string()),
  /** What crowded each side's repetitions (other load, GPU slowdowns), in words; absent where nothing was recorded. */
  confounders: z.object({ against: z.array(z.string()), now: z.array(z.string()) }).optional(),
  verdict: GateVerdictSchema,
});
export type CheckResult = z.infer<typeof CheckResultSchema>;

/** runs.compareSpeed: two saved benchmark runs, the second judged against the first; nothing is measured. */
export const CompareSpeedParamsSchema = z
  .object({
    ids: z.tuple([IdSchema, IdSchema]),
    tolerance: z.number().gt(0).lt(1).default(0.05),
  })
  .strict();
