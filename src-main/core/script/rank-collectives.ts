// A launch's ranks at their collectives (issue 40): what each probe sent, on the collector's clock, into the verdicts of
// core/stats/collectives.ts, over the same measured steps as the ranks' own figures (rank-stats.ts).
import { TIMELINE_COLLECTIVES, TIMELINE_RANKS, TIMELINE_STEPS, type ScriptCollectives } from '../../api/collectives';
import { communication, straggler, type RankCollective, type RankStep } from '../stats/collectives';
import type { ProbeConnection } from './probe-channel';
import type { ProbeMessage } from './probe-messages';
import { rankSteps } from './rank-stats';

type ClockOffset = Extract<ProbeMessage, { type: 'clockOffset' }>;

/** The rank's clock offset: of its probes at the start and the end, the one with the least uncertainty. */
function clockOf(connection: ProbeConnection): ClockOffset | null {
  const offsets = connection.messages.filter((m): m is ClockOffset => m.type === 'clockOffset');
  return offsets.reduce<ClockOffset | null>((a, b) => (a === null || b.uncertaintyMs < a.uncertaintyMs ? b : a), null);
}

/** The verdicts of a launch of several ranks, or null: one rank, or no collective timed (no DDP model). */
export function rankCollectives(connections: readonly ProbeConnection[], warmupSteps: number, limit: number | undefined): ScriptCollectives | null {
  if (connections.length < 2) return null;
  const measured = (step: number) => step > warmupSteps && (limit === undefined || step <= warmupSteps + limit);
  const collectives: RankCollective[] = [];
  const steps: RankStep[] = [];
  const clocks: ScriptCollectives['clocks'] = [];
  for (const c of connections) {
    const rank = c.hello.rank;
    const clock = clockOf(c);
    clocks.push({ rank, node: c.hello.node ?? null, offsetMs: clock?.offsetMs ?? null, uncertaintyMs: clock?.uncertaintyMs ?? null });
    const shift = clock?.offsetMs ?? 0;
    const commMs = new Map<number, number>();
    for (const m of c.messages) {
      if (m.type !== 'collectives' || !measured(m.step)) continue;
      for (const item of m.items) {
        collectives.push({ rank, step: m.step, index: item.index, arriveMs: item.arriveMs + shift, doneMs: item.doneMs + shift, bytes: item.bytes, ...(item.count !== undefined ? { count: item.count } : {}) });
        commMs.set(m.step, (commMs.get(m.step) ?? 0) + Math.max(0, item.doneMs - item.arriveMs));
      }
    }
    for (const s of rankSteps(c)) {
      if (!measured(s.step)) continue;
      // DDP's all-reduces run inside the backward, which waits for the last of them: the time waiting is
      // communication, not compute (counted in both, a rank that waits would look as if it computed longer).
      const comm = commMs.get(s.step) ?? 0;
      const compute = Math.max(0, s.phasesMs.forward + s.phasesMs.loss + s.phasesMs.backward - comm);
      steps.push({ rank, step: s.step, stepMs: s.durMs, dataMs: s.dataMs, computeMs: compute, commMs: comm });
    }
  }
  if (collectives.length === 0) return null;
  const uncertainty = Math.max(0, ...clocks.map((c) => c.uncertaintyMs ?? 0));
  const verdict = straggler(collectives, steps, { clockUncertaintyMs: uncertainty });
  const comm = communication(collectives, steps);
  const first = collectives.filter((c) => c.rank === collectives[0].rank && c.step === collectives[0].step);
  return {
    straggler: verdict.rank,
    phase: verdict.phase,
    lateMs: verdict.lateMs,
    lastShare: verdict.lastShare,
    why: verdict.why,
    steps: verdict.steps,
    exposedShare: comm.exposedShare,
    busBytesPerSec: comm.busBytesPerSec,
    perStep: { count: first.reduce((n, c) => n + (c.count ?? 1), 0), bytes: first.reduce((n, c) => n + c.bytes, 0) },
    timing: collectives.some((c) => c.count !== undefined) ? 'step' : 'bucket',
    timeline: timelineOf(collectives),
    clocks,
  };
}

/** The last measured steps every rank reported, as marks per rank (times after the step's first arrival), bounded. */
function timelineOf(collectives: readonly RankCollective[]): NonNullable<ScriptCollectives['timeline']> {
  // One pass each (a job of thousands of ranks sends millions of collectives): which ranks each step has, then its marks.
  const ranksAt = new Map<number, Set<number>>();
  for (const c of collectives) {
    if (!ranksAt.has(c.step)) ranksAt.set(c.step, new Set());
    ranksAt.get(c.step)!.add(c.rank);
  }
  const ranks = [...new Set(collectives.map((c) => c.rank))].sort((a, b) => a - b);
  const steps = [...ranksAt].filter(([, seen]) => seen.size === ranks.length).map(([step]) => step).sort((a, b) => a - b).slice(-TIMELINE_STEPS);
  const shown = new Set(ranks.slice(0, TIMELINE_RANKS));
  const start = new Map<number, number>(steps.map((s) => [s, Infinity]));
  for (const c of collectives) if (start.has(c.step)) start.set(c.step, Math.min(start.get(c.step)!, c.arriveMs));
  const byRank = new Map<number, NonNullable<ScriptCollectives['timeline']>['ranks'][number]['marks']>([...shown].map((r) => [r, []]));
  for (const c of collectives) {
    if (!start.has(c.step) || !shown.has(c.rank) || c.index >= TIMELINE_COLLECTIVES) continue;
    byRank.get(c.rank)!.push({ step: c.step, index: c.index, arriveMs: c.arriveMs - start.get(c.step)!, doneMs: c.doneMs - start.get(c.step)! });
  }
  const cut = [
    ranks.length > TIMELINE_RANKS ? `ranks after the first ${TIMELINE_RANKS} of ${ranks.length}` : '',
    collectives.some((c) => start.has(c.step) && c.index >= TIMELINE_COLLECTIVES) ? `collectives after the first ${TIMELINE_COLLECTIVES} of a step` : '',
  ].filter(Boolean);
  return { steps, ranks: [...byRank].map(([rank, marks]) => ({ rank, marks })), cut: cut.length ? `not shown: ${cut.join('; ')}` : null };
}
