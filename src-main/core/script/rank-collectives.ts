// A launch's ranks at their collectives (issue 40): what each probe sent, on the collector's clock, into the verdicts of
// core/stats/collectives.ts, over the same measured steps as the ranks' own figures (rank-stats.ts).
import type { ScriptCollectives } from '../../api/collectives';
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
        collectives.push({ rank, step: m.step, index: item.index, arriveMs: item.arriveMs + shift, doneMs: item.doneMs + shift, bytes: item.bytes });
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
    perStep: { count: first.length, bytes: first.reduce((n, c) => n + c.bytes, 0) },
    clocks,
  };
}
