// A multi-rank job at its collectives (issue 40) in words, for the "Ranks at the collectives" panel: who the others
// wait for and why, what communication costs, and each rank's clock. Pure functions of the result.
import { formatValue } from '@api/charts/theme';
import type { ScriptCollectives } from '@api/collectives';
import { floorWords, scalingWords } from '@api/collectives';

/** What makes the straggler late, as a person reads it. */
export const LATE_PHASE_WORDS: Readonly<Record<NonNullable<ScriptCollectives['phase']>, string>> = {
  data: 'waiting for data (its data loader)',
  compute: 'compute (forward and backward)',
  host: 'host work outside data loading, compute and communication',
};

export interface RankRow {
  rank: number;
  straggler: boolean;
  node: string;
  /** Its clock against the collector's: "+0.051 ± 0.066 ms", or why there is none. */
  clock: string;
  /** The share of steps it arrived last at, with its 95% interval. */
  last: string;
}

export interface CollectiveWords {
  /** The verdict: the straggler and its phase, or "No straggler" with the reason. */
  verdict: string;
  /** What the verdict rests on, when a straggler is named (the reason is the verdict's own otherwise). */
  why: string | null;
  exposed: string;
  bandwidth: string;
  /** The all-reduce floor between the ranks, or null where it was not measured. */
  floor: string | null;
  /** Scaling efficiency against the job on this node alone, or null where it was not measured. */
  scaling: string | null;
  perStep: string;
  ranks: RankRow[];
}

const pct = (x: number) => `${(100 * x).toFixed(0)}%`;
const sentence = (s: string) => `${s.charAt(0).toUpperCase()}${s.slice(1)}${/[.!?]$/.test(s) ? '' : '.'}`;

/** A clock offset with its sign and uncertainty: "+0.051 ± 0.066 ms", "−1.2 ± 0.3 ms". */
export function clockWords(offsetMs: number | null, uncertaintyMs: number | null): string {
  if (offsetMs === null) return 'not measured';
  const sign = offsetMs < 0 ? '−' : '+';
  return `${sign}${formatValue(Math.abs(offsetMs))}${uncertaintyMs === null ? '' : ` ± ${formatValue(uncertaintyMs)}`} ms`;
}

export function collectiveWords(c: ScriptCollectives): CollectiveWords {
  const verdict =
    c.straggler === null
      ? sentence(`no straggler: ${c.why.replace(/^no straggler: /, '')}`)
      : `Rank ${c.straggler} is the straggler, late in ${c.phase ? LATE_PHASE_WORDS[c.phase] : 'no one phase more than another'}: it arrives ${formatValue(c.lateMs, 'ms')} after the others' median arrival at the collectives.`;
  const ranks = [...new Set([...c.clocks.map((k) => k.rank), ...c.lastShare.map((s) => s.rank)])].sort((a, b) => a - b);
  return {
    verdict,
    why: c.straggler === null ? null : sentence(c.why),
    exposed: `${(100 * c.exposedShare).toFixed(1)}% of the step (median over ${c.steps} steps): time in collectives after the last rank arrived, which nothing overlapped`,
    bandwidth:
      c.busBytesPerSec !== null
        ? `${formatValue(c.busBytesPerSec / 1e9, 'GB/s')} all-reduce bus bandwidth (median)`
        : c.timing === 'step'
          ? 'not measured: timed once a step (timing each bucket measures it, at a cost to small steps)'
          : 'not measured',
    floor: floorWords(c),
    scaling: scalingWords(c),
    perStep: `${c.perStep.count} per step, ${formatValue(c.perStep.bytes / 1e6, 'MB')} in all (one rank's)${c.timing === 'step' ? ', timed together once a step' : ''}`,
    ranks: ranks.map((rank) => {
      const clock = c.clocks.find((k) => k.rank === rank);
      const last = c.lastShare.find((s) => s.rank === rank);
      return {
        rank,
        straggler: rank === c.straggler,
        node: clock?.node ?? 'unknown',
        clock: clock ? clockWords(clock.offsetMs, clock.uncertaintyMs) : 'not measured',
        last: last ? `${pct(last.share)} of steps (95% interval ${pct(last.low)} to ${pct(last.high)})` : 'not measured',
      };
    }),
  };
}
