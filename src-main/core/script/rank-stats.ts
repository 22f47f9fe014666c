import type { BenchmarkPhases } from '../../api/benchmark';
import type { ScriptRank } from '../../api/script-target';
import { withOther } from '../stats/benchmark-summary';
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
