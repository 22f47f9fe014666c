// What each attempt measured against the baseline, and what the data support deciding about it.
import { modelSpecWords } from '../../api/model-words';
import { settingWords } from '../../api/run-config';
import { PHASE_NAMES_WITH_OTHER } from '../../api/benchmark';
import type { Decision } from '../stats/decision';
import { decideOnRepetitions } from '../stats/decision';
import type { Interval } from '../stats/medians';
import { relativeHalfWidth } from '../stats/medians';
import { ratioInterval } from '../stats/ratio-interval';
import type { OptimiseTrial } from '../../api/optimise';
import type { BatchSearchRun, BenchmarkRun, OptimiseRun, ReportRun } from './report-runs';

/** A setting that differs from the baseline run's. */
export interface SettingChange {
  setting: string;
  baseline: string;
  attempt: string;
  /** How it was measured (warm-up, measured steps, repetitions), not what was measured. */
  protocol: boolean;
}

export interface BenchmarkAttempt {
  kind: 'benchmark';
  run: BenchmarkRun;
  baseline: BenchmarkRun;
  changes: SettingChange[];
  /** Candidate over baseline samples/s: bootstrap CI of the ratio of medians over the repetitions. */
  speedup: Interval;
  /** Relative half width of the baseline's CI: a gain must exceed it. */
  noiseFloor: number;
  decision: Decision;
  why: string;
  /** The phase whose time moved most: per step, or per sample (µs) when the samples per step differ. */
  largestPhaseChange: { phase: string; baseline: number; attempt: number; unit: 'ms per step' | 'µs per sample' } | null;
  /** Settings changed that alter the training recipe, not only its speed. */
  recipeChanges: string[];
}

export interface SearchAttempt {
  kind: 'batch-search';
  run: BatchSearchRun;
  /** A benchmark of the same model, data and device, to compare the recommended batch with; null when there is none. */
  baseline: BenchmarkRun | null;
}

/** The search recommends the batch its baseline already trains with: nothing to change, and no gain to claim. */
export function recommendsBaselineBatch(a: SearchAttempt): boolean {
  const b = a.baseline?.result;
  return b !== undefined && a.run.result.recommended !== null && b.target.accumulation === 1 && b.batchSize === a.run.result.recommended;
}

/** One change the optimisation wizard measured (A/B/A/B against its current best) and decided on. */
export interface WizardAttempt {
  kind: 'optimise-trial';
  run: OptimiseRun;
  trial: OptimiseTrial;
}

export type Attempt = BenchmarkAttempt | SearchAttempt | WizardAttempt;

/** Settings that change what training computes (the update, the numerics), not only how fast. */
const RECIPE_SETTINGS = new Set(['batchSize', 'accumulation', 'precision', 'optimizer', 'schedule', 'sampleRatio', 'model', 'data']);

const show = (v: unknown): string => (v === undefined ? 'not set' : typeof v === 'object' ? JSON.stringify(v) : String(v));
/** A model spec in words; one the words cannot say, as its JSON. */
const showModel = (v: unknown): string => (v === undefined ? 'not set' : (modelSpecWords(v) ?? JSON.stringify(v)));

/** The settings two benchmark runs differ in: training options, step counts, model spec and data. */
export function settingChanges(a: BenchmarkRun, b: BenchmarkRun): SettingChange[] {
  const ca = a.record.config as Record<string, unknown>;
  const cb = b.record.config as Record<string, unknown>;
  const oa = (ca.options ?? {}) as Record<string, unknown>;
  const ob = (cb.options ?? {}) as Record<string, unknown>;
  const out: SettingChange[] = [];
  for (const key of [...new Set([...Object.keys(oa), ...Object.keys(ob)])]) {
    if (JSON.stringify(oa[key]) !== JSON.stringify(ob[key])) out.push({ setting: key, baseline: show(oa[key]), attempt: show(ob[key]), protocol: false });
  }
  if (JSON.stringify(ca.spec) !== JSON.stringify(cb.spec)) {
    // Specs whose words are the same (a default written out in one) are told apart by their JSON.
    const [wa, wb] = [showModel(ca.spec), showModel(cb.spec)];
    out.push({ setting: 'model', baseline: wa === wb ? show(ca.spec) : wa, attempt: wa === wb ? show(cb.spec) : wb, protocol: false });
  }
  if (a.result.target.data !== b.result.target.data) out.push({ setting: 'data', baseline: a.result.target.data, attempt: b.result.target.data, protocol: false });
  for (const key of ['warmupSteps', 'steps', 'repeat']) {
    if (ca[key] !== cb[key]) out.push({ setting: key, baseline: show(ca[key]), attempt: show(cb[key]), protocol: true });
  }
  return out;
}

/** Same model, data and device: what makes a benchmark a baseline for a batch-size search. */
function comparable(search: BatchSearchRun, bench: BenchmarkRun): boolean {
  const cs = search.record.config as { spec?: unknown };
  const cb = bench.record.config as { spec?: unknown };
  return JSON.stringify(cs.spec) === JSON.stringify(cb.spec) && search.result.target.data === bench.result.target.data && search.result.device === bench.result.device;
}

function benchmarkAttempt(run: BenchmarkRun, baseline: BenchmarkRun): BenchmarkAttempt {
  const speedup = ratioInterval(
    baseline.result.repetitions.map((r) => r.samplesPerSec),
    run.result.repetitions.map((r) => r.samplesPerSec),
  );
  const noiseFloor = relativeHalfWidth(baseline.result.samplesPerSecCi);
  const { decision, why } = decideOnRepetitions(speedup, noiseFloor);
  // A different batch makes per-step times incomparable: compare the time each sample costs instead.
  const perStep = (r: BenchmarkRun) => r.result.batchSize * r.result.target.accumulation;
  const perSample = perStep(baseline) !== perStep(run);
  const unit = perSample ? 'µs per sample' : 'ms per step';
  const scale = (r: BenchmarkRun) => (perSample ? 1000 / perStep(r) : 1);
  let largest: BenchmarkAttempt['largestPhaseChange'] = null;
  for (const phase of PHASE_NAMES_WITH_OTHER) {
    const b = baseline.result.phasesMs[phase] * scale(baseline);
    const a = run.result.phasesMs[phase] * scale(run);
    if (!largest || Math.abs(a - b) > Math.abs(largest.attempt - largest.baseline)) largest = { phase, baseline: b, attempt: a, unit };
  }
  const changes = settingChanges(baseline, run);
  const recipeChanges = changes.filter((c) => RECIPE_SETTINGS.has(c.setting)).map((c) => settingWords(c.setting));
  return { kind: 'benchmark', run, baseline, changes, speedup, noiseFloor, decision, why, largestPhaseChange: largest, recipeChanges };
}

/** The baseline (the first benchmark) and one attempt per later benchmark and per batch-size search, in the order given. */
export function analyseAttempts(runs: readonly ReportRun[]): { baseline: BenchmarkRun | null; attempts: Attempt[] } {
  const benchmarks = runs.filter((r): r is BenchmarkRun => r.kind === 'benchmark');
  const baseline = benchmarks[0] ?? null;
  const attempts: Attempt[] = [];
  for (const run of runs) {
    if (run.kind === 'benchmark' && baseline && run !== baseline) attempts.push(benchmarkAttempt(run, baseline));
    if (run.kind === 'batch-search') attempts.push({ kind: 'batch-search', run, baseline: benchmarks.find((b) => comparable(run, b)) ?? null });
    if (run.kind === 'optimise') for (const trial of run.result.trials) attempts.push({ kind: 'optimise-trial', run, trial });
  }
  return { baseline, attempts };
}
