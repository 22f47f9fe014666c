import { DECIDING_COVERAGE, intervalLevel } from '../../api/order-interval';
import type { Interval } from './medians';

export type Decision = 'accept' | 'reject' | 'inconclusive';

/**
 * The wizard's rule for one change, from the CI of its speedup (candidate over
 * the current best, throughput) and the baseline's noise floor (relative half
 * width of its median's CI): keep it only when the whole CI lies above 1 and
 * the gain is larger than the noise; drop it as slower only when the whole CI
 * lies below 1; anything else could be noise and is said to be so. `level` names the interval's
 * coverage (a paired interval over few pairs covers less than 95%).
 */
export function decide(speedup: Interval, noiseFloor: number, level = '95%'): { decision: Decision; why: string } {
  const pct = (x: number) => `${(100 * (x - 1)).toFixed(1)}%`;
  const ci = `speedup ${speedup.median.toFixed(3)}x, ${level} CI ${speedup.low.toFixed(3)}–${speedup.high.toFixed(3)}`;
  const noise = `${(100 * noiseFloor).toFixed(1)}%`;
  if (speedup.low > 1 && speedup.median - 1 > noiseFloor) {
    return { decision: 'accept', why: `${ci}: the whole interval is above 1 and the gain (${pct(speedup.median)}) exceeds the noise floor (${noise})` };
  }
  if (speedup.high < 1) return { decision: 'reject', why: `${ci}: the whole interval is below 1, the change is slower` };
  if (speedup.low > 1) {
    return { decision: 'inconclusive', why: `${ci}: faster, but the gain (${pct(speedup.median)}) is within the noise floor (${noise})` };
  }
  return { decision: 'inconclusive', why: `${ci}: the interval contains 1, so the difference could be noise` };
}

/**
 * decide() for two sets of repetitions (the ADR's benchmark attempts): its level read from the interval, and below
 * DECIDING_COVERAGE a change only leans, as a wizard trial over few pairs does (issue 38: an ADR accepted a change on
 * an 80% interval the wizard would not keep).
 */
export function decideOnRepetitions(speedup: Interval, noiseFloor: number): { decision: Decision; why: string } {
  const d = decide(speedup, noiseFloor, intervalLevel(speedup));
  if ((speedup.coverage ?? 1) >= DECIDING_COVERAGE || d.decision === 'inconclusive') return d;
  const lean = d.decision === 'accept' ? 'faster' : 'slower';
  return {
    decision: 'inconclusive',
    why: `leaning ${lean}: ${d.why}; a change is accepted or rejected only on an interval of ${(100 * DECIDING_COVERAGE).toFixed(0)}% or more (3 repetitions or more of each)`,
  };
}
