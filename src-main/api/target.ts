import { z } from 'zod';

import type { OptimiseTarget } from './optimise';
import type { ScriptTarget } from './script-target';

/** What a job measures: the engine's configuration or the user's own command. */
export const TargetKindSchema = z.enum(['engine', 'script']);
export type TargetKind = z.infer<typeof TargetKindSchema>;

/**
 * What a benchmark, a batch-size search, the optimisation wizard or a training run measures
 * (docs/architecture.md, "Targets, runners and jobs"): our engine's configuration, or the user's own
 * training command. In core, runnerFor (core/targets/runner-for.ts) is the one reader of a request's target.
 */
export type EngineTarget = { kind: 'engine' } & OptimiseTarget;
export type Target = EngineTarget | ScriptTarget;

/**
 * Which target a request measures. A script's request names it (`target.kind: 'script'`); an engine
 * request carries its model and data at the top (train, benchmark, batch-size search) or in `target`
 * (the wizard), as run files written before the Target existed do, so it needs no kind.
 */
export function targetKindOf(request: unknown): TargetKind {
  const target = (request as { target?: { kind?: unknown } } | null)?.target;
  return typeof target === 'object' && target !== null && target.kind === 'script' ? 'script' : 'engine';
}

/**
 * The params of one request that measures either target: the script's form where the request's target
 * says so, the engine's otherwise. Unlike a plain union, a bad request is told what is wrong with the
 * form it chose (`params.target.command: ...`), not with both.
 */
export function eitherTarget<E extends z.ZodType, S extends z.ZodType>(engine: E, script: S) {
  const schema = z.unknown().transform((input, ctx) => {
    const parsed = (targetKindOf(input) === 'script' ? script : engine).safeParse(input);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
    return z.NEVER;
  });
  return schema as unknown as z.ZodType<z.output<E> | z.output<S>, z.input<E> | z.input<S>>;
}
