import type { BenchmarkPhases } from '../../api/benchmark';
import { TIMELINE_COLLECTIVES, TIMELINE_RANKS, TIMELINE_STEPS, type ScriptCollectives } from '../../api/collectives';
import type { ScriptRank } from '../../api/script-target';
import { withOther } from '../stats/benchmark-summary';
import { communication, straggler, type RankCollective, type RankStep } from '../stats/collectives';
import type { ProbeConnection } from './probe-channel';
import type { ProbeDone, ProbeMessage, ProbeStep } from './probe-messages';

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : 0);
const sum = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0);

/** One rank's steps with the CUDA-event phase times (sent later) put back on their step. */
export function rankSteps(connection: ProbeConnection): ProbeStep[] {
  const steps = new Map<number, ProbeStep>();
  for (const m of connection.messages) if (m.type === 'step') steps.set(m.step, { ...m, phasesMs: { ...m.phasesMs } });
  for (const m of connection.messages) {
    if (m.type !== 'phases') continue;
    const s = steps.get(m.step);
    if (!s) continue;
    s.phasesMs = m.phasesMs;
    s.timing = m.timing;
  }
  return [...steps.values()].sort((a, b) => a.step - b.step);
}

export interface RankSummary {
  rank: ScriptRank;
  /** ms per measured step in each named phase (h2d is not separated by the probe: it stays in 'other'). */
  named: Omit<BenchmarkPhases, 'other'>;
}

/**
 * A rank's figures over its measured steps: those after the warm-up (and, with a
 * step limit, up to it). Each step's time runs from the end of the previous
 * optimizer step to the end of its own, so the steps tile the training loop.
 */
export function summarizeRank(connection: ProbeConnection, warmupSteps: number, limit: number | undefined): RankSummary | null {
  const all = rankSteps(connection);
  const measured = all.filter((s) => s.step > warmupSteps && (limit === undefined || s.step <= warmupSteps + limit));
  if (measured.length === 0) return null;
  const done = connection.messages.find((m): m is ProbeDone => m.type === 'done');
  const ms = sum(measured.map((s) => s.durMs));
  const samples = sum(measured.map((s) => s.samples));
  const last = [...measured].reverse().find((s) => s.batches > 0);
  const data = sum(measured.map((s) => s.dataMs));
  const n = measured.length;
  return {
    rank: {
      rank: connection.hello.rank,
      pid: connection.hello.pid,
      steps: all.length,
      measuredSteps: n,
      batchSize: last ? Math.round(last.samples / last.batches) : null,
      samplesPerStep: last ? last.samples : null,
      batchesPerStep: last ? last.batches : null,
      samplesPerSec: ms > 0 ? (1000 * samples) / ms : 0,
      steadyStateMeanMs: ms / n,
      wallClockMeanMs: mean(all.map((s) => s.durMs)),
      dataWaitMs: data / n,
      dataWaitPercent: ms > 0 ? (100 * data) / ms : 0,
      timing: measured.some((s) => s.timing === 'cuda-events') ? 'cuda-events' : 'host-clock',
      device: done?.memory.device ?? 'unknown',
      cudaPeakBytes: done?.memory.cudaPeakBytes ?? null,
      cudaTotalBytes: done?.memory.cudaTotalBytes ?? null,
      hostPeakRssBytes: done?.memory.hostPeakRssBytes ?? null,
    },
    named: {
      data: data / n,
      h2d: 0,
      forward: mean(measured.map((s) => s.phasesMs.forward)),
      loss: mean(measured.map((s) => s.phasesMs.loss)),
      backward: mean(measured.map((s) => s.phasesMs.backward)),
      optimizer: mean(measured.map((s) => s.phasesMs.optimizer)),
    },
  };
}

/**
 * The launch as one: global samples/s is the sum over ranks; the step time is the
 * slowest rank's (the others wait for it at every gradient exchange); phases are
 * the mean over ranks.
 */
export function combineRanks(ranks: readonly RankSummary[]) {
  if (ranks.length === 0) throw new RangeError('combineRanks: no rank measured a step');
  const slowest = ranks.reduce((a, b) => (b.rank.steadyStateMeanMs > a.rank.steadyStateMeanMs ? b : a));
  const named = { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0 };
  for (const key of Object.keys(named) as (keyof typeof named)[]) named[key] = mean(ranks.map((r) => r.named[key]));
  const { phases, exceedsMs } = withOther(named, slowest.rank.steadyStateMeanMs);
  const waits = ranks.reduce((a, b) => (b.rank.dataWaitMs > a.rank.dataWaitMs ? b : a));
  return {
    samplesPerSec: sum(ranks.map((r) => r.rank.samplesPerSec)),
    steadyStateMeanMs: slowest.rank.steadyStateMeanMs,
    wallClockMeanMs: Math.max(...ranks.map((r) => r.rank.wallClockMeanMs)),
    phasesMs: phases,
    namedPhasesExceedStepMs: exceedsMs,
    slowestDataWait: { rank: waits.rank.rank, msPerStep: waits.rank.dataWaitMs, percent: waits.rank.dataWaitPercent },
  };
}

// A whole training run's sums, fed message by message (the training run reads its ranks this way).

type Phases = Extract<ProbeMessage, { type: 'phases' }>['phasesMs'];

const zeroPhases = (): Phases => ({ forward: 0, loss: 0, backward: 0, optimizer: 0 });
function addPhases(into: Phases, from: Phases): void {
  into.forward += from.forward;
  into.loss += from.loss;
  into.backward += from.backward;
  into.optimizer += from.optimizer;
}

/**
 * One rank's running sums over a whole training run, fed message by message, so
 * memory stays the same after a million steps (the channel keeps only the last
 * step). "Measured" is every step after the warm-up; the window is the steps
 * since the last progress point.
 */
export class RankTally {
  /** The latest optimizer step (the probe numbers them 1, 2, ...). */
  steps = 0;
  allMs = 0;
  /** How many steps had each batch size: an epoch's last batch is often smaller, so the run's batch is the commonest. */
  private readonly batchSizes = new Map<number, number>();
  timing: 'cuda-events' | 'host-clock' = 'host-clock';
  readonly measured = { n: 0, ms: 0, samples: 0, dataMs: 0, phasesMs: zeroPhases() };
  window = { ms: 0, samples: 0, dataMs: 0 };

  constructor(
    readonly rank: number,
    private readonly warmupSteps: number,
  ) {}

  get batchSize(): number | null {
    let best: [number, number] | null = null;
    for (const entry of this.batchSizes) if (!best || entry[1] > best[1]) best = entry;
    return best ? best[0] : null;
  }

  step(m: ProbeStep): void {
    this.steps = Math.max(this.steps, m.step);
    this.allMs += m.durMs;
    if (m.batches > 0) {
      const size = Math.round(m.samples / m.batches);
      this.batchSizes.set(size, (this.batchSizes.get(size) ?? 0) + 1);
    }
    if (m.timing === 'cuda-events') this.timing = 'cuda-events';
    this.window.ms += m.durMs;
    this.window.samples += m.samples;
    this.window.dataMs += m.dataMs;
    if (m.step <= this.warmupSteps) return;
    const s = this.measured;
    s.n++;
    s.ms += m.durMs;
    s.samples += m.samples;
    s.dataMs += m.dataMs;
    addPhases(s.phasesMs, m.phasesMs); // zeros when CUDA events time the step: those come in a later 'phases' message
  }

  /** CUDA-event phase times, read back after the GPU finished the step. */
  phases(m: Extract<ProbeMessage, { type: 'phases' }>): void {
    this.timing = 'cuda-events';
    if (m.step > this.warmupSteps) addPhases(this.measured.phasesMs, m.phasesMs);
  }

  /** The window's rate and data-wait share, then a fresh window. */
  takeWindow(): { samplesPerSec: number | null; dataWaitPercent: number | null } {
    const w = this.window;
    this.window = { ms: 0, samples: 0, dataMs: 0 };
    if (w.ms <= 0) return { samplesPerSec: null, dataWaitPercent: null };
    return { samplesPerSec: w.samples > 0 ? (1000 * w.samples) / w.ms : null, dataWaitPercent: (100 * w.dataMs) / w.ms };
  }
}

/** Training losses of rank 0 since the last progress point, and the last finite one. */
export class LossTally {
  private sum = 0;
  private count = 0;
  private step: number | null = null;
  last: { step: number; value: number } | null = null;
  /** Why the probe stopped reading losses, when it did. */
  off: string | null = null;

  add(steps: readonly number[], values: readonly (number | null)[]): void {
    steps.forEach((step, i) => {
      const v = values[i];
      this.step = step;
      if (v === null || v === undefined || !Number.isFinite(v)) return;
      this.sum += v;
      this.count++;
      this.last = { step, value: v };
    });
  }

  pending(): boolean {
    return this.count > 0;
  }

  take(): { loss: number | null; lossStep: number | null } {
    const out = { loss: this.count > 0 ? this.sum / this.count : null, lossStep: this.count > 0 ? this.step : null };
    this.sum = 0;
    this.count = 0;
    return out;
  }
}

// A launch's ranks at their collectives (issue 40): what each probe sent, on the collector's clock, into the
// verdicts of core/stats/collectives.ts, over the same measured steps as the ranks' own figures above.

type ClockOffset = Extract<ProbeMessage, { type: 'clockOffset' }>;

/** The rank's clock offset: of its probes at the start and the end, the one with the least uncertainty. */
function clockOf(connection: ProbeConnection): ClockOffset | null {
  const offsets = connection.messages.filter((m): m is ClockOffset => m.type === 'clockOffset');
  return offsets.reduce<ClockOffset | null>((a, b) => (a === null || b.uncertaintyMs < a.uncertaintyMs ? b : a), null);
}

/**
 * Each rank's shift onto the collector's clock. Ranks of one torchrun agent (same host, same node rank) share a wall
 * clock, so they share its best estimate: apart, each rank's own estimation error (ms on a loaded machine) would skew
 * arrivals that are really simultaneous, enough to hide the exposed communication of a job on one node.
 */
function shiftsOf(connections: readonly ProbeConnection[]): Map<ProbeConnection, ClockOffset | null> {
  const best = new Map<string, ClockOffset | null>();
  const keyOf = (c: ProbeConnection) => (c.hello.node !== undefined && c.hello.nodeRank !== undefined ? `${c.hello.nodeRank}@${c.hello.node}` : `rank ${c.hello.rank}`);
  for (const c of connections) {
    const own = clockOf(c);
    const seen = best.get(keyOf(c)) ?? null;
    best.set(keyOf(c), own !== null && (seen === null || own.uncertaintyMs < seen.uncertaintyMs) ? own : seen);
  }
  return new Map(connections.map((c) => [c, best.get(keyOf(c)) ?? null]));
}

/** The verdicts of a launch of several ranks, or null: one rank, or no collective timed (no DDP model, no torch.distributed call timed). */
export function rankCollectives(connections: readonly ProbeConnection[], warmupSteps: number, limit: number | undefined): ScriptCollectives | null {
  if (connections.length < 2) return null;
  const measured = (step: number) => step > warmupSteps && (limit === undefined || step <= warmupSteps + limit);
  const collectives: RankCollective[] = [];
  const steps: RankStep[] = [];
  const clocks: ScriptCollectives['clocks'] = [];
  const shifts = shiftsOf(connections);
  for (const c of connections) {
    const rank = c.hello.rank;
    const clock = shifts.get(c) ?? null;
    clocks.push({ rank, node: c.hello.node ?? null, offsetMs: clock?.offsetMs ?? null, uncertaintyMs: clock?.uncertaintyMs ?? null });
    const shift = clock?.offsetMs ?? 0;
    const commMs = new Map<number, number>();
    const inBackwardMs = new Map<number, number>();
    for (const m of c.messages) {
      if (m.type !== 'collectives' || !measured(m.step)) continue;
      for (const item of m.items) {
        collectives.push({ rank, step: m.step, index: item.index, arriveMs: item.arriveMs + shift, doneMs: item.doneMs + shift, bytes: item.bytes, op: item.op, ...(item.count !== undefined ? { count: item.count } : {}) });
        const ms = Math.max(0, item.doneMs - item.arriveMs);
        commMs.set(m.step, (commMs.get(m.step) ?? 0) + ms);
        if (!item.explicit) inBackwardMs.set(m.step, (inBackwardMs.get(m.step) ?? 0) + ms);
      }
    }
    for (const s of rankSteps(c)) {
      if (!measured(s.step)) continue;
      // DDP's all-reduces run inside the backward, which waits for the last of them: the time waiting is
      // communication, not compute (counted in both, a rank that waits would look as if it computed longer). The
      // script's own calls run outside the model's phases: nothing to take out of compute.
      const comm = commMs.get(s.step) ?? 0;
      const compute = Math.max(0, s.phasesMs.forward + s.phasesMs.loss + s.phasesMs.backward - (inBackwardMs.get(s.step) ?? 0));
      steps.push({ rank, step: s.step, stepMs: s.durMs, dataMs: s.dataMs, computeMs: compute, commMs: comm });
    }
  }
  // Collectives are between ranks: one rank's alone (the others sent none) are no verdict, and would cost the
  // verdicts a pass over every one of them as steps "complete" with that one rank (re-attack of round 7).
  if (new Set(collectives.map((c) => c.rank)).size < 2) return null;
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
    floor: floorOf(connections),
  };
}

/** Rank 0's all-reduce floor (every rank measured the same all-reduces), or null. */
function floorOf(connections: readonly ProbeConnection[]): ScriptCollectives['floor'] {
  const first = connections.find((c) => c.hello.rank === 0) ?? connections[0];
  const m = first?.messages.find((x) => x.type === 'allreduceFloor');
  return m?.type === 'allreduceFloor' ? { bytes: m.bytes, ms: m.ms, busBytesPerSec: m.busBytesPerSec } : null;
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
  // A rank's collectives come in its call order: the first TIMELINE_COLLECTIVES of each step are drawn. DDP's buckets
  // keep their number (from 0; timed per bucket they complete out of order); the script's own calls (from 1000) are
  // marked with their place in the step.
  const drawn = new Map<number, Map<number, number>>([...shown].map((r) => [r, new Map()]));
  let cutCollectives = false;
  for (const c of collectives) {
    if (!start.has(c.step) || !shown.has(c.rank)) continue;
    const n = drawn.get(c.rank)!.get(c.step) ?? 0;
    if (n >= TIMELINE_COLLECTIVES) {
      cutCollectives = true;
      continue;
    }
    drawn.get(c.rank)!.set(c.step, n + 1);
    byRank.get(c.rank)!.push({ step: c.step, index: c.index < 1000 ? c.index : n, arriveMs: c.arriveMs - start.get(c.step)!, doneMs: c.doneMs - start.get(c.step)! });
  }
  const cut = [
    ranks.length > TIMELINE_RANKS ? `ranks after the first ${TIMELINE_RANKS} of ${ranks.length}` : '',
    cutCollectives ? `collectives after the first ${TIMELINE_COLLECTIVES} of a step` : '',
  ].filter(Boolean);
  return { steps, ranks: [...byRank].map(([rank, marks]) => ({ rank, marks })), cut: cut.length ? `not shown: ${cut.join('; ')}` : null };
}
