// Compare's table of results: what each run ended with, side by side, read from
// what runs.get returns (summary, run.json, the recorded events), so any kind of
// run on either target fills the rows it has and leaves the rest empty.
import type { RunDetail, TrainEvent, TrainStepEvent } from './training';

/** How a row's values are written: the component formats, this file only decides. */
export type CompareValueKind = 'fraction' | 'number' | 'rate' | 'seconds' | 'count';

export interface CompareResultRow {
  key: string;
  label: string;
  kind: CompareValueKind;
  /** One per run, in the order given; null where the run has none. */
  values: (number | null)[];
  /** The one run with the best value, where "best" means something (accuracy, loss, rate) and no other run ties it; else null. */
  best: number | null;
}

interface ScriptResultView {
  lastLoss?: { value?: unknown } | null;
  steps?: unknown;
}

const steps = (run: RunDetail) => run.events.filter((e): e is TrainStepEvent => e.type === 'step');
const lastEpoch = (run: RunDetail) => run.events.filter((e): e is Extract<TrainEvent, { type: 'epoch' }> => e.type === 'epoch').at(-1);
/** A script run's result (its loss and steps are there, not in step events); empty for an engine run, whose result means other things. */
const scriptResult = (run: RunDetail): ScriptResultView =>
  run.summary.target === 'script' ? (((run.record as { result?: unknown }).result ?? {}) as ScriptResultView) : {};
const num = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) ? x : null);

/**
 * A run's test accuracy: its result's, else the last epoch's evaluation (a run cancelled or stopped after an
 * epoch), with that epoch, so the run's page and Compare show the same figure.
 */
export function testAccuracyOf(run: RunDetail): { accuracy: number | null; epoch: number | null } {
  if (run.summary.testAccuracy != null) return { accuracy: run.summary.testAccuracy, epoch: null };
  const last = lastEpoch(run);
  const accuracy = num(last?.testAccuracy);
  return { accuracy, epoch: accuracy === null || !last ? null : last.epoch };
}

/** The rows, in the order shown; `better` null: no value is better than another (a count of steps). */
const ROWS: readonly { key: string; label: string; kind: CompareValueKind; better: 'higher' | 'lower' | null; of: (run: RunDetail) => number | null }[] = [
  { key: 'testAccuracy', label: 'test accuracy', kind: 'fraction', better: 'higher', of: (r) => testAccuracyOf(r).accuracy },
  { key: 'testLoss', label: 'test loss', kind: 'number', better: 'lower', of: (r) => num(lastEpoch(r)?.testLoss) },
  { key: 'trainAccuracy', label: 'final training accuracy', kind: 'fraction', better: 'higher', of: (r) => num(steps(r).at(-1)?.accuracy) },
  { key: 'trainLoss', label: 'final training loss', kind: 'number', better: 'lower', of: (r) => num(steps(r).at(-1)?.loss) ?? num(scriptResult(r).lastLoss?.value) },
  { key: 'samplesPerSec', label: 'samples/s', kind: 'rate', better: 'higher', of: (r) => r.summary.samplesPerSec },
  {
    key: 'wallSeconds',
    label: 'wall time (start to end)',
    kind: 'seconds',
    better: null, // runs of different lengths: a shorter one is not a better one
    of: (r) => (r.summary.finishedAt ? (Date.parse(r.summary.finishedAt) - Date.parse(r.summary.createdAt)) / 1000 : null),
  },
  { key: 'steps', label: 'optimizer steps', kind: 'count', better: null, of: (r) => num(steps(r).at(-1)?.globalStep) ?? num(scriptResult(r).steps) },
];

/** Every row at least one run has a value for. */
export function compareResults(runs: readonly RunDetail[]): CompareResultRow[] {
  // samples/s of a benchmark's median, a search's one trial and a training run's whole wall clock measure different
  // things: a best among them would mislead (a UI walk saw a 5-step trial marked best), so only runs of one kind rank.
  const oneKind = new Set(runs.map((r) => r.summary.kind)).size === 1;
  return ROWS.flatMap(({ key, label, kind, better: rowBetter, of }) => {
    const better = key === 'samplesPerSec' && !oneKind ? null : rowBetter;
    const values = runs.map((r) => {
      const v = of(r);
      return v !== null && Number.isFinite(v) ? v : null;
    });
    const present = values.flatMap((v, i) => (v === null ? [] : [{ v, i }]));
    if (!present.length) return [];
    let best: number | null = null;
    if (better && present.length >= 2) {
      const top = present.reduce((a, b) => ((better === 'higher' ? b.v > a.v : b.v < a.v) ? b : a));
      // A tie has no winner.
      if (present.filter((p) => p.v === top.v).length === 1) best = top.i;
    }
    return [{ key, label, kind, values, best }];
  });
}
