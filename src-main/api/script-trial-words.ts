import type { TrialCompile } from './optimise';
import type { ScriptOptimiseResult } from './optimise-result';

/** How the loss guard went, in one line: what it compared and with which seed, or why it could not. */
export function lossCheckText(c: ScriptOptimiseResult['target']['lossCheck'], preset: ScriptOptimiseResult['preset']): string {
  if (!c) return 'not checked (a run from before the loss guard)';
  const seeded = c.seededBy === 'script' ? `the script seeds itself (${c.where ?? 'where unknown'})` : `seed ${c.seed}, set by Trainbench as torch was imported`;
  if (c.unchecked) return `not checked: ${c.unchecked}; changes were kept on their speed alone (${seeded})`;
  const within =
    preset === 'reproducible'
      ? 'leaves the mean loss over the measured steps as it was'
      : `keeps the mean loss over the measured steps within ${(100 * c.tolerance).toFixed(1)}%${preset === 'max-speed' ? ` (${(400 * c.tolerance).toFixed(1)}% for a numerics change)` : ''}`;
  return `a kept change ${within}; ${seeded}`;
}

/** A compile trial's cost and pay-off, in one line. */
export function compileText(c: TrialCompile): string {
  const payoff = c.payoffSteps === null ? 'never pays off (the compiled step is not faster)' : `pays off after ${c.payoffSteps.toLocaleString('en-US')} steps`;
  const recompiled = c.inMeasuredSteps ? `, ${c.inMeasuredSteps} recompilation(s) in the measured steps` : '';
  if (c.coldSeconds !== undefined) {
    const cold = c.coldPayoffSteps == null ? '' : ` (${c.coldPayoffSteps.toLocaleString('en-US')} from cold)`;
    return `compile ${c.coldSeconds.toFixed(1)} s the first launch (caches cold), ${c.seconds.toFixed(1)} s each launch after (${c.compilations} compilations${recompiled}); ${payoff}${cold}`;
  }
  return `compile ${c.seconds.toFixed(1)} s per launch (${c.compilations} compilations${recompiled}); ${payoff}`;
}
