import type { GateOutcome, GateVerdict } from '../../api/check';
import { DECIDING_COVERAGE, intervalLevel } from '../../api/order-interval';
import type { Interval } from '../stats/medians';
import { ratioInterval } from '../stats/ratio-interval';

const EXIT: Record<GateOutcome, 0 | 1 | 2> = { faster: 0, same: 0, slower: 1, undecided: 2 };

const signed = (x: number) => `${x >= 1 ? '+' : '-'}${(100 * Math.abs(x - 1)).toFixed(1)}%`;

/**
 * The gate's rule, the wizard's interval logic with a tolerance: slower only when the whole interval lies below
 * 1 − tolerance; faster when it lies above 1; the same when it lies within ±tolerance; otherwise the noise is
 * larger than the tolerance and it cannot decide (as it cannot when the two were measured under other conditions).
 */
export function gateVerdict(saved: readonly number[], now: readonly number[], tolerance: number, differences: readonly string[] = []): GateVerdict {
  const t = `±${(100 * tolerance).toFixed(1)}%`;
  const make = (outcome: GateOutcome, change: Interval | null, text: string): GateVerdict => ({ outcome, exitCode: EXIT[outcome], change, tolerance, text });
  if (differences.length) return make('undecided', null, `could not decide: the saved run was measured under other conditions (${differences.join('; ')})`);
  if (saved.length < 2 || now.length < 2) {
    return make('undecided', null, `could not decide: ${Math.min(saved.length, now.length)} repetition gives no interval (the saved run has ${saved.length}, this one ${now.length}): use 3 or more`);
  }
  const change = ratioInterval(saved, now);
  const ci = `${signed(change.median)} (${intervalLevel(change)} CI ${signed(change.low)} to ${signed(change.high)})`;
  // As the wizard and the ADR: no verdict on an interval below 90% (2 + 2 repetitions cover 66.7%).
  if ((change.coverage ?? 1) < DECIDING_COVERAGE) {
    return make('undecided', change, `could not decide: ${ci} rests on ${saved.length} + ${now.length} repetitions, and a verdict needs an interval of ${(100 * DECIDING_COVERAGE).toFixed(0)}% or more (3 repetitions or more of each)`);
  }
  if (change.high < 1 - tolerance) return make('slower', change, `slower by ${(100 * (1 - change.median)).toFixed(1)}%: ${ci}, the whole interval beyond the tolerance of ${t}`);
  if (change.low > 1) return make('faster', change, `faster by ${(100 * (change.median - 1)).toFixed(1)}%: ${ci}, the whole interval above the saved run`);
  if (change.low >= 1 - tolerance && change.high <= 1 + tolerance) return make('same', change, `same within the tolerance: ${ci} lies within ${t}`);
  return make('undecided', change, `could not decide: ${ci} reaches past the tolerance of ${t}, so the noise is larger than the change to detect; more repetitions or steps narrow it`);
}
