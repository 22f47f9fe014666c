import { targetKindOf } from '../../api/target';
import type { TargetRunner } from './target-runner';

/** The two runners of one workbench. */
export type Runners = Readonly<Record<'engine' | 'script', TargetRunner>>;

/**
 * The runner of a request's target: the only place in core that reads which target a request measures
 * (a script's request names it with `target.kind: 'script'`; an engine request carries its model at the
 * top, as run files written before the target existed do).
 */
export function runnerFor(request: object, runners: Runners): TargetRunner {
  return runners[targetKindOf(request)];
}
