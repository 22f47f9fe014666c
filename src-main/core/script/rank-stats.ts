import type { BenchmarkPhases } from '../../api/benchmark';
import type { ScriptRank } from '../../api/script-target';
import { withOther } from '../stats/benchmark-summary';
import type { ProbeConnection } from './probe-channel';
import type { ProbeDone, ProbeStep } from './probe-messages';

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
