import type { ScriptOptimiseResult } from './script-target';

/** How the loss guard went, in one line: what it compared and with which seed, or why it could not. */
export function lossCheckText(c: ScriptOptimiseResult['lossCheck'], preset: ScriptOptimiseResult['preset']): string {
  if (!c) return 'not checked (a run from before the loss guard)';
  const seeded = c.seededBy === 'script' ? `the script seeds itself (${c.where ?? 'where unknown'})` : `seed ${c.seed}, set by Trainbench as torch was imported`;
  if (c.unchecked) return `not checked: ${c.unchecked}; changes were kept on their speed alone (${seeded})`;
  const within =
    preset === 'reproducible'
      ? 'leaves the mean loss over the measured steps as it was'
      : `keeps the mean loss over the measured steps within ${(100 * c.tolerance).toFixed(1)}%${preset === 'max-speed' ? ` (${(400 * c.tolerance).toFixed(1)}% for a numerics change)` : ''}`;
  return `a kept change ${within}; ${seeded}`;
}
