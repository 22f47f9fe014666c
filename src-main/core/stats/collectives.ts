// The verdicts of a job of several ranks (issue 40): which rank the others wait for at the collectives and why,
// how much of the step waits on communication, and the all-reduce bandwidth achieved. Step times cannot say it:
// DDP's all-reduce makes every rank's step as long as the slowest's; the ranks' arrival times at each collective do.
// Pure functions of what the probes sent, on the collector's clock (each node's offset already applied).
import { median } from './medians';

/** One collective (a DDP gradient bucket's all-reduce, an explicit torch.distributed call) as one rank saw it. */
export interface RankCollective {
  rank: number;
  /** The rank's optimizer step it belongs to. */
  step: number;
  /** Its place among the step's collectives (the same on every rank: collectives run in one order). */
  index: number;
  /** When the rank called it and when it completed there, ms on the collector's clock. */
  arriveMs: number;
  doneMs: number;
  bytes: number;
  /** The collectives it spans (DDP's buckets timed per step, together); 1 when absent. */
  count?: number;
  /** What it is ("allreduce", "allgather", "broadcast", ...); an all-reduce when absent. */
  op?: string;
}

/** One rank's step, by phase (ms): what made it late, if it was. */
export interface RankStep {
  rank: number;
  step: number;
  stepMs: number;
  /** Blocked in the DataLoader. */
  dataMs: number;
  /** Forward, loss and backward: the model's own work. */
  computeMs: number;
  /** Waiting in collectives (arrival to completion, summed). */
  commMs: number;
}

export type LatePhase = 'data' | 'compute' | 'host';

export interface StragglerVerdict {
  /** The rank named the straggler, or null: none stands out beyond the noise. */
  rank: number | null;
  /** Per rank: the share of steps at which it arrived last (on average over the step's collectives). */
  lastShare: { rank: number; share: number; low: number; high: number }[];
  /** What a rank's share would be by chance: 1 / ranks. */
  chance: number;
  /** How late the named rank (or the latest on average) arrived, median over steps, ms after the others' median. */
  lateMs: number;
  /** The phase in which the named rank spends more than the others, median over steps; null when none is named. */
  phase: LatePhase | null;
  /** Steps the verdict rests on (those every rank reported). */
  steps: number;
  why: string;
}

export interface CommVerdict {
  /** Median over steps of the share of the step spent in collectives after the last rank arrived (the smallest rank's own wait): communication nobody overlapped. */
  exposedShare: number;
  /**
   * Median bus bandwidth of the all-reduces, bytes/s: bytes x 2(n-1)/n over the time from the last arrival to
   * completion; null where no collective was timed alone (per step, the buckets before the last overlap the backward).
   */
  busBytesPerSec: number | null;
}

/** Wilson's 95% score interval of a share of n trials: honest at small n and near 0 or 1, where the normal one is not. */
export function wilson(successes: number, n: number, z = 1.959964): { low: number; high: number } {
  if (n === 0) return { low: 0, high: 1 };
  const p = successes / n;
  const denom = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / denom;
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/** The steps every rank reported a collective of, with each rank's collectives by index. */
function completeSteps(collectives: readonly RankCollective[], ranks: readonly number[]): Map<number, Map<number, RankCollective[]>> {
  const bySteps = new Map<number, Map<number, RankCollective[]>>();
  for (const c of collectives) {
    const step = bySteps.get(c.step) ?? new Map<number, RankCollective[]>();
    const at = step.get(c.index) ?? [];
    at.push(c);
    step.set(c.index, at);
    bySteps.set(c.step, step);
  }
  for (const [step, byIndex] of bySteps) {
    // Every rank once: one rank repeating an index while another is missing is not a complete collective.
    for (const [index, seen] of byIndex) if (seen.length !== ranks.length || new Set(seen.map((c) => c.rank)).size !== ranks.length) byIndex.delete(index);
    if (byIndex.size === 0) bySteps.delete(step);
  }
  return bySteps;
}

/**
 * The straggler: per step, each rank's mean lateness over the step's collectives (its arrival minus the other
 * ranks' median arrival at that collective); the step's last rank is the latest on average. A rank is named only when it is last
 * at more steps than chance (the lower end of its share's 95% Wilson interval above 1 / ranks) and late by more than
 * the noise (`minLateMs`: the clocks' uncertainty, or a share of the step), so a clean run names none.
 */
export function straggler(collectives: readonly RankCollective[], steps: readonly RankStep[], options: { clockUncertaintyMs?: number; minLateShareOfStep?: number } = {}): StragglerVerdict {
  const ranks = [...new Set(collectives.map((c) => c.rank))].sort((a, b) => a - b);
  const chance = ranks.length ? 1 / ranks.length : 1;
  const bySteps = completeSteps(collectives, ranks);
  const lateness = new Map<number, number[]>(ranks.map((r) => [r, []]));
  const lastCount = new Map<number, number>(ranks.map((r) => [r, 0]));
  for (const byIndex of bySteps.values()) {
    const late = new Map<number, number[]>(ranks.map((r) => [r, []]));
    for (const seen of byIndex.values()) {
      // Against the others' median: with two ranks, the median of both is their midpoint, half the lateness.
      const order = seen.map((c, i) => ({ at: c.arriveMs, i })).sort((a, b) => a.at - b.at);
      const sorted = order.map((o) => o.at);
      order.forEach((o, p) => late.get(seen[o.i].rank)!.push(seen[o.i].arriveMs - medianWithout(sorted, p)));
    }
    const meanLate = ranks.map((r) => ({ r, late: late.get(r)!.reduce((s, x) => s + x, 0) / late.get(r)!.length }));
    for (const { r, late: l } of meanLate) lateness.get(r)!.push(l);
    const last = meanLate.reduce((a, b) => (b.late > a.late ? b : a));
    lastCount.set(last.r, lastCount.get(last.r)! + 1);
  }
  const n = bySteps.size;
  const lastShare = ranks.map((rank) => ({ rank, share: n ? lastCount.get(rank)! / n : 0, ...wilson(lastCount.get(rank)!, n) }));
  const most = lastShare.reduce<(typeof lastShare)[number] | null>((a, b) => (a === null || b.share > a.share ? b : a), null);
  const stepMs = median(steps.length ? steps.map((s) => s.stepMs) : [0]);
  const lateMs = most ? median(lateness.get(most.rank)!.length ? lateness.get(most.rank)! : [0]) : 0;
  // 5% of the step: a rank later than that costs the job as much; on a busy 2-core machine a clean job's ranks
  // settled into one order by 2-3% of the step, which would name a straggler nobody planted.
  const minLate = Math.max(options.clockUncertaintyMs ?? 0, (options.minLateShareOfStep ?? 0.05) * stepMs);
  const pct = (x: number) => `${(100 * x).toFixed(0)}%`;
  if (!most || n < 2) {
    return { rank: null, lastShare, chance, lateMs, phase: null, steps: n, why: `too few steps with every rank's collectives (${n}) to name a straggler` };
  }
  const often = most.low > chance;
  const late = lateMs > minLate;
  if (!often || !late) {
    const because = !often
      ? `no rank arrives last more often than chance: rank ${most.rank} at ${pct(most.share)} of ${n} steps (95% interval ${pct(most.low)}-${pct(most.high)}), chance ${pct(chance)}`
      : `rank ${most.rank} arrives last at ${pct(most.share)} of ${n} steps, but only ${lateMs.toFixed(2)} ms after the others' median, within the noise (${minLate.toFixed(2)} ms)`;
    return { rank: null, lastShare, chance, lateMs, phase: null, steps: n, why: `no straggler: ${because}` };
  }
  const phase = latePhase(most.rank, steps);
  return {
    rank: most.rank,
    lastShare,
    chance,
    lateMs,
    phase,
    steps: n,
    why:
      `rank ${most.rank} arrives last at ${pct(most.share)} of ${n} steps (95% interval ${pct(most.low)}-${pct(most.high)}, chance ${pct(chance)}), ` +
      `${lateMs.toFixed(2)} ms after the others' median arrival${phase ? `; it spends longer than the others in ${PHASE_WORDS[phase]}` : ''}`,
  };
}

/** The median of a sorted array without its element at `p`, in O(1); the element itself when it is alone. */
function medianWithout(sorted: readonly number[], p: number): number {
  const m = sorted.length - 1;
  if (m === 0) return sorted[0];
  const at = (k: number) => sorted[k < p ? k : k + 1]; // the k-th of the others
  return m % 2 === 1 ? at((m - 1) / 2) : (at(m / 2 - 1) + at(m / 2)) / 2;
}

const PHASE_WORDS: Record<LatePhase, string> = {
  data: 'waiting for data (its DataLoader)',
  compute: 'compute (forward and backward)',
  host: 'host work outside data, compute and communication (Python, logging, a sleep, the optimizer)',
};

/** The phase in which `rank` spends more than the other ranks' median at the same step, median over steps. */
function latePhase(rank: number, steps: readonly RankStep[]): LatePhase | null {
  const bySteps = new Map<number, RankStep[]>();
  // Pushed in place: a copy per rank would make a job of many ranks quadratic (seconds of a blocked event loop).
  for (const s of steps) {
    const at = bySteps.get(s.step);
    if (at) at.push(s);
    else bySteps.set(s.step, [s]);
  }
  const excess: Record<LatePhase, number[]> = { data: [], compute: [], host: [] };
  const host = (s: RankStep) => Math.max(0, s.stepMs - s.dataMs - s.computeMs - s.commMs);
  for (const seen of bySteps.values()) {
    const own = seen.find((s) => s.rank === rank);
    const others = seen.filter((s) => s.rank !== rank);
    if (!own || !others.length) continue;
    excess.data.push(own.dataMs - median(others.map((s) => s.dataMs)));
    excess.compute.push(own.computeMs - median(others.map((s) => s.computeMs)));
    excess.host.push(host(own) - median(others.map(host)));
  }
  const ranked = (Object.keys(excess) as LatePhase[]).filter((p) => excess[p].length).map((p) => ({ p, ms: median(excess[p]) }));
  const top = ranked.reduce<{ p: LatePhase; ms: number } | null>((a, b) => (a === null || b.ms > a.ms ? b : a), null);
  return top && top.ms > 0 ? top.p : null;
}

/** Exposed communication and the bus bandwidth of the all-reduces, from the steps every rank reported. */
export function communication(collectives: readonly RankCollective[], steps: readonly RankStep[]): CommVerdict {
  const ranks = [...new Set(collectives.map((c) => c.rank))];
  const n = ranks.length;
  const bySteps = completeSteps(collectives, ranks);
  const stepMs = new Map<number, number>();
  for (const s of steps) stepMs.set(s.step, Math.max(stepMs.get(s.step) ?? 0, s.stepMs));
  const exposed: number[] = [];
  const bus: number[] = [];
  for (const [step, byIndex] of bySteps) {
    let waited = 0;
    for (const seen of byIndex.values()) {
      // The wait after the last arrival is the last rank's own, arrival to completion on its own clock; read as the
      // smallest own wait over the ranks, no clock offset enters it (a wrong one cannot pick an early rank, whose wait
      // includes the straggler's lateness), and a rank stamped late (descheduled between handing in its gradients and
      // the stamp) cannot push it below 0. Seen on a loaded 2-core CI machine: every step's cross-rank wait came out 0.
      const ms = Math.min(...seen.map((c) => Math.max(0, c.doneMs - c.arriveMs)));
      waited += ms;
      // Bus bandwidth as NCCL's tests define it for an all-reduce; other collectives move bytes in other patterns.
      // Only where the stamps agree (the last arrival before every completion): a late stamp's sliver of a wait would
      // make bytes over it a bandwidth no link has.
      const consistent = Math.max(...seen.map((c) => c.arriveMs)) <= Math.min(...seen.map((c) => c.doneMs));
      if (ms > 0 && consistent && n > 1 && (seen[0].count ?? 1) === 1 && (seen[0].op ?? 'allreduce') === 'allreduce') bus.push((seen[0].bytes * ((2 * (n - 1)) / n)) / (ms / 1000));
    }
    const total = stepMs.get(step);
    if (total && total > 0) exposed.push(Math.min(1, waited / total));
  }
  return { exposedShare: exposed.length ? median(exposed) : 0, busBytesPerSec: bus.length ? median(bus) : null };
}

/** Scaling efficiency: the job's samples/s over `nodes` times the same job's on one node (1 = perfect scaling). */
export function scalingEfficiency(jobSamplesPerSec: number, oneNodeSamplesPerSec: number, nodes: number): number {
  if (!(oneNodeSamplesPerSec > 0) || nodes < 1) throw new RangeError(`scaling efficiency needs a one-node rate above 0 and at least one node, got ${oneNodeSamplesPerSec} and ${nodes}`);
  return jobSamplesPerSec / (nodes * oneNodeSamplesPerSec);
}
