import type { BenchmarkProgress } from '@api/benchmark';
import type { ScriptProgressEvent } from '@api/train-result';
import type { BatchTrial } from '@api/batch-size';
import { printable } from '@api/shell-word';

/** The line above a script's live output: what the launch is doing now, and how it ended. */
export interface ScriptStatus {
  text: string;
  /** 'error' for a real failure; 'done' for an end as asked (the probe's stop included); 'live' while it runs. */
  tone: 'live' | 'done' | 'error';
}

/** How the job followed ended, as the status line needs it; null while it runs. */
export type ScriptJobEnd = { ok: true } | { ok: false; code: string; message: string };

const n = (x: number) => x.toLocaleString('en-US');
const plural = (k: number, one: string, many = `${one}s`) => `${n(k)} ${k === 1 ? one : many}`;

/**
 * The status line of a script benchmark, from its benchmark.progress events: the warm-up, the
 * measured step x of N, and "stopping the script after the N measured steps" when the probe ends
 * a launch on purpose, so its output stopping mid-epoch does not read as a crash. A failure
 * still reads as one, with the error's own words.
 */
export function scriptBenchmarkStatus(p: BenchmarkProgress | null, end: ScriptJobEnd | null): ScriptStatus | null {
  const launch = p && p.repetitions > 1 ? `launch ${p.repetition} of ${p.repetitions}: ` : '';
  if (end && !end.ok) {
    if (end.code === 'E_CANCELLED') return { text: `cancelled${p && p.step > 0 ? ` at step ${n(p.step)}` : ''}: its process group was stopped`, tone: 'done' };
    const where = p && p.repetition > 0 ? (p.repetitions > 1 ? `launch ${p.repetition} of ${p.repetitions} ` : 'the launch ') : '';
    // The error's first line: its tail (the script's last lines) is in the output just below.
    const first = end.message.split('\n')[0].replace(/;\s*its last lines:?\s*$/, '');
    return { text: `${where}failed: ${first}`, tone: 'error' };
  }
  if (end?.ok) {
    const stopped = p?.steps != null ? `, each stopped by Trainbench after its ${plural(p.steps, 'measured step')}, as asked` : '';
    return { text: `finished: ${plural(p?.repetitions ?? 1, 'launch', 'launches')} measured${stopped}`, tone: 'done' };
  }
  if (!p) return { text: 'starting the command…', tone: 'live' };
  const measured = Math.max(0, p.step - p.warmupSteps);
  switch (p.phase) {
    case 'preparing':
      return { text: `${launch}starting the command…`, tone: 'live' };
    case 'warmup':
      return { text: `${launch}warming up: step ${n(p.step)} of ${n(p.warmupSteps)} (not measured)${ranksHeard(p)}`, tone: 'live' };
    case 'measuring':
      return {
        text: `${launch}measuring step ${n(measured)}${p.steps != null ? ` of ${n(p.steps)}` : ' (until the script ends on its own)'}${ranksHeard(p)}`,
        tone: 'live',
      };
    case 'stopping':
      return {
        text: `${launch}stopping the script after the ${plural(p.steps ?? measured, 'measured step')} (${plural(p.step, 'optimizer step')} with the warm-up), as asked: not a crash`,
        tone: 'done',
      };
    case 'repetition-done':
      return { text: `${launch}done${p.samplesPerSec != null ? `, ${n(Math.round(p.samplesPerSec))} samples/s` : ''}${p.repetition < p.repetitions ? '; starting the next launch…' : ''}`, tone: 'live' };
  }
}

/**
 * A job of several ranks: who has reported so far, so a node joining from another machine shows as soon as its
 * first step arrives. Each rank with its node when there are a few; a count, the nodes and the steps' range beyond.
 */
function ranksHeard(p: BenchmarkProgress): string {
  const ranks = p.ranks;
  if (!ranks || ranks.length < 2) return '';
  // The host name comes from the rank itself: its control characters are shown escaped.
  const nodeOf = (r: (typeof ranks)[number]) => [r.nodeRank !== null ? `node ${r.nodeRank}` : null, r.node === null ? null : printable(r.node)].filter(Boolean).join(', ');
  if (ranks.length <= 4) return `; ranks heard: ${ranks.map((r) => `${r.rank}${nodeOf(r) ? ` (${nodeOf(r)})` : ''} at step ${n(r.step)}`).join(', ')}`;
  const nodes = new Set(ranks.map(nodeOf)).size;
  const steps = ranks.map((r) => r.step);
  return `; ${plural(ranks.length, 'rank')} heard on ${plural(nodes, 'node')}, at steps ${n(Math.min(...steps))}-${n(Math.max(...steps))}`;
}

/**
 * The status line of a whole script training run, from its script.progress events: the step of
 * its limit, and "stopping the script at its step limit" once the probe ends it there.
 */
export function scriptRunStatus(p: Pick<ScriptProgressEvent, 'step' | 'maxSteps'> | null): ScriptStatus {
  if (!p) return { text: 'starting the command…', tone: 'live' };
  if (p.maxSteps !== null && p.step >= p.maxSteps) {
    return { text: `stopping the script at its step limit, after ${plural(p.maxSteps, 'step')}, as asked: not a crash`, tone: 'done' };
  }
  return { text: `training: step ${n(p.step)}${p.maxSteps !== null ? ` of ${n(p.maxSteps)}` : ' (until the script ends on its own)'}`, tone: 'live' };
}

/**
 * The status line of a script batch-size search, from its batchSize.trial events: each trial is a
 * launch the probe ends after its measured steps, so the output stops mid-epoch at every trial; an
 * out-of-memory trial is a data point, not a failure of the search.
 */
export function scriptBatchStatus(trials: readonly Pick<BatchTrial, 'index' | 'batchSize' | 'outcome' | 'samplesPerSec'>[], end: ScriptJobEnd | null): ScriptStatus {
  if (end && !end.ok) {
    if (end.code === 'E_CANCELLED') return { text: `cancelled after ${plural(trials.length, 'trial')}: the launch in flight was stopped`, tone: 'done' };
    return { text: `the search failed: ${end.message.split('\n')[0].replace(/;\s*its last lines:?\s*$/, '')}`, tone: 'error' };
  }
  if (end?.ok) return { text: `finished: ${plural(trials.length, 'trial')}; Trainbench ends each trial's launch after its measured steps, so its output stops mid-epoch`, tone: 'done' };
  const last = trials.at(-1);
  if (!last) return { text: 'trial 1: starting the command with the first batch size…', tone: 'live' };
  const what =
    last.outcome === 'ok'
      ? `trained${last.samplesPerSec !== null ? ` at ${n(Math.round(last.samplesPerSec))} samples/s` : ''}, stopped by Trainbench after its measured steps, as asked`
      : last.outcome === 'E_OOM'
        ? 'out of memory (a data point of the search, not a failure)'
        : 'killed by a signal (the kernel may have run out of memory)';
  return { text: `trial ${last.index + 1}, batch ${n(last.batchSize)}: ${what}; the next trial is starting…`, tone: 'live' };
}
