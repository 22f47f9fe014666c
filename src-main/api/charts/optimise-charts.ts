// The optimisation wizard's charts: each trial's speedup with its CI and decision, and the
// physical limits beside the baseline and the best so far. Pure functions of the wizard's
// state, so the Optimise area and the report generator draw the same charts.
import type { EChartsCoreOption } from 'echarts/core';

import type { Limits, OptimiseBaseline, OptimiseFinal, OptimiseTrial, TrialCompile, TrialDecision, WizardObjective } from '../optimise';
import type { ScriptOptimiseResult } from '../optimise-result';
import { finalFigures, trialFigures } from '../paired-figures';
import { ciLevel, intervalLevel, intervalLevels, orderIntervalCoverage } from '../order-interval';
import { errorBar } from './error-bar';
import { formatValue, GRID_LINE, MUTED, TEXT, tooltip } from './theme';

/** One colour per decision, the same in the chart, the table and the legend. */
export const DECISION_COLOURS: Readonly<Record<TrialDecision, string>> = {
  accept: '#3fb950',
  reject: '#f85149',
  inconclusive: '#8b98a5',
  crashed: '#d29922',
  'changes-results': '#d16ba5',
  proposed: '#4fb3ff',
  confounded: '#39c5bb',
};

/** The decisions as a person reads them. */
export const DECISION_WORDS: Readonly<Record<TrialDecision, string>> = {
  accept: 'accepted',
  reject: 'rejected',
  inconclusive: 'inconclusive',
  crashed: 'crashed',
  'changes-results': 'changes results',
  proposed: 'proposed (recipe)',
  confounded: 'confounded',
};

const title = (text: string) => ({ text, left: 8, top: 4, textStyle: { color: TEXT, fontSize: 12, fontWeight: 500 } });
const axisLabel = { color: MUTED, fontSize: 10 };
const x3 = (v: number) => `${v.toFixed(3)}x`;

export type TrialChartInput = Pick<OptimiseTrial, 'index' | 'change' | 'decision' | 'lean' | 'speedup' | 'bestSamplesPerSec' | 'candidateSamplesPerSec'>;

/** The level of a trial's paired interval: 95%, or what its few pairs cover (93.8% for 5). */
export function trialCiLevel(t: Pick<OptimiseTrial, 'bestSamplesPerSec' | 'candidateSamplesPerSec'>): string {
  return ciLevel(orderIntervalCoverage(Math.min(t.bestSamplesPerSec.length, t.candidateSamplesPerSec.length)));
}

/** A trial's decision as a person reads it: "leaning faster, 75.0%" where its few pairs could only lean. */
export function trialDecisionWords(t: Pick<OptimiseTrial, 'decision' | 'lean' | 'bestSamplesPerSec' | 'candidateSamplesPerSec'>): string {
  return t.decision === 'inconclusive' && t.lean ? `leaning ${t.lean}, ${trialCiLevel(t)}` : DECISION_WORDS[t.decision];
}

/** "2. loader workers 0 -> 1": numbered to match the trial table. */
export function trialLabels(trials: readonly TrialChartInput[]): string[] {
  return trials.map((t) => `${t.index}. ${t.change.label}`);
}

/**
 * Speedup of every trial over the best it was measured against: the median as a point coloured by
 * its decision, its confidence interval as an error bar (95%, or less over few pairs: see trialCiLevel), and the lines a kept change must clear (1 and 1 + noise floor).
 * A trial without a speedup (it crashed) keeps its place on the axis, without a point.
 */
export function trialsOption(trials: readonly TrialChartInput[], noiseFloor: number | null, labels = trialLabels(trials)): EChartsCoreOption {
  const decisions = (Object.keys(DECISION_COLOURS) as TrialDecision[]).filter((d) => trials.some((t) => t.decision === d));
  // A trial that only leans (too few pairs to decide) is drawn as inconclusive: the legend says so (a UI walk found it unnamed).
  const leaning = trials.some((t) => t.decision === 'inconclusive' && t.lean);
  const word = (d: TrialDecision) => (d === 'inconclusive' && leaning ? 'inconclusive or leaning' : DECISION_WORDS[d]);
  // One label under its line, the other over it, inside the plot, so a small noise floor does not stack the two
  // (verticalAlign alone left both centred on their lines past the end: a UI walk saw them overlap).
  type Mark = { yAxis: number; name: string; lineStyle: { color: string; type: 'dashed' | 'solid' }; label: { position: 'insideEndTop' | 'insideEndBottom' } };
  const marks: Mark[] = [{ yAxis: 1, name: 'no change', lineStyle: { color: MUTED, type: 'solid' }, label: { position: 'insideEndBottom' } }];
  if (noiseFloor !== null && noiseFloor > 0) {
    marks.push({ yAxis: +(1 + noiseFloor).toFixed(4), name: `noise floor +${(100 * noiseFloor).toFixed(1)}%`, lineStyle: { color: DECISION_COLOURS.accept, type: 'dashed' }, label: { position: 'insideEndTop' } });
  }
  return {
    animation: false,
    title: title('Speedup of each trial over the current best (median, confidence interval)'),
    legend: { bottom: 0, data: decisions.map(word), textStyle: { color: MUTED } },
    tooltip: { ...tooltip('x', 'item') },
    grid: { left: 56, right: 110, top: 50, bottom: labels.length > 3 ? 96 : 64 },
    xAxis: { type: 'category', data: labels, axisLabel: { ...axisLabel, interval: 0, rotate: labels.length > 3 ? 20 : 0 }, axisLine: { lineStyle: { color: GRID_LINE } } },
    yAxis: { type: 'value', name: 'speedup', scale: true, nameTextStyle: { color: MUTED }, axisLabel: { ...axisLabel, formatter: (v: number) => `${formatValue(v)}x` }, splitLine: { lineStyle: { color: GRID_LINE } } },
    series: [
      ...decisions.map((d, i) => ({
        name: word(d),
        type: 'scatter',
        symbolSize: 11,
        itemStyle: { color: DECISION_COLOURS[d] },
        z: 11,
        data: trials.flatMap((t, at) => (t.decision === d && t.speedup ? [[at, +t.speedup.median.toFixed(4)]] : [])),
        // The reference lines ride on the first series; they are part of reading every point.
        ...(i === 0 ? { markLine: { symbol: 'none', silent: true, label: { color: MUTED, fontSize: 10, position: 'end', formatter: '{b}' }, data: marks } } : {}),
      })),
      {
        name: 'confidence interval',
        type: 'custom',
        renderItem: errorBar,
        // Both ends count for the axis extent, so an interval is never cut off.
        encode: { x: 0, y: [1, 2] },
        z: 10,
        tooltip: { show: false },
        data: trials.flatMap((t, at) => (t.speedup ? [[at, +t.speedup.low.toFixed(4), +t.speedup.high.toFixed(4)]] : [])),
      },
      {
        // Invisible points at the reference lines: the axis always holds 1 and the noise floor, the two
        // lines every point is read against, and still rounds its ends to its own ticks.
        name: 'references',
        type: 'scatter',
        symbolSize: 0,
        silent: true,
        tooltip: { show: false },
        data: marks.map((m) => [0, m.yAxis]),
      },
    ],
  };
}

export function trialsLabel(trials: readonly TrialChartInput[], labels = trialLabels(trials)): string {
  const one = (t: TrialChartInput, i: number) =>
    `${labels[i]}: ${trialDecisionWords(t)}${t.speedup ? `, ${x3(t.speedup.median)} (${trialCiLevel(t)} CI ${x3(t.speedup.low)} to ${x3(t.speedup.high)})` : ', no speedup measured'}`;
  return `Trial speedups chart${trials.length ? `: ${trials.map(one).join('; ')}` : ', no trial finished yet'}`;
}

/** The current best as last measured, what configuration that is, and where that number comes from. */
export interface BestSoFar {
  samplesPerSec: number;
  /** The final A/B/A/B measurement's interval, when there is one. */
  ci: { low: number; median: number; high: number; coverage?: number } | null;
  source: string;
  /** The bar's name: which configuration was measured ("final: kept changes", "baseline, re-measured in trial 3"). */
  label: string;
  /**
   * Set where this is the baseline's own configuration measured again and the two measurements differ by more
   * than the baseline's noise: the machine's load changed between them, and neither is the configuration's speed.
   */
  drift: string | null;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Said where one configuration measured again differs beyond the noise (issue 27: a 2.3x "best" with nothing
 * kept): every trial that re-measured the baseline's own configuration is looked at, not only the last, so a
 * trial 56% slower is not left unsaid beside a warning about a later one 28% slower.
 */
function driftOf(baseline: Pick<OptimiseBaseline, 'samplesPerSec' | 'noiseFloor'>, again: readonly { index: number; samplesPerSec: number }[]): string | null {
  const off = again
    .map((a) => ({ ...a, ratio: a.samplesPerSec / baseline.samplesPerSec.median }))
    .filter((a) => Math.abs(a.ratio - 1) > baseline.noiseFloor);
  if (!off.length) return null;
  const words = off.map((a) => `${(100 * Math.abs(a.ratio - 1)).toFixed(0)}% ${a.ratio > 1 ? 'faster' : 'slower'} in trial ${a.index}`);
  const list = words.length === 1 ? words[0] : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
  return `the baseline's own configuration measured ${list} than at the start (noise ±${(100 * baseline.noiseFloor).toFixed(1)}%): the machine's load changed between the measurements`;
}

/**
 * The freshest measurement of the current best: the final comparison when it kept a change; else the last
 * trial's side that is now the best (its candidate when kept, its current-best side otherwise, which is the
 * baseline's configuration while nothing is kept); else the baseline. A candidate's and the final's figures are
 * the ones their speedup gives (paired-figures.ts), so the bar agrees with the speedup shown beside it; under
 * the energy objective the speedups are of samples per joule, and the bars are the sides' own samples/s.
 */
export function bestSoFar(
  baseline: Pick<OptimiseBaseline, 'samplesPerSec' | 'noiseFloor'>,
  trials: readonly Pick<OptimiseTrial, 'index' | 'kept' | 'speedup' | 'bestSamplesPerSec' | 'candidateSamplesPerSec'>[],
  final: Pick<OptimiseFinal, 'changes' | 'samplesPerSec' | 'speedup' | 'baselineSamplesPerSec'> | null,
  objective: WizardObjective = 'throughput',
): BestSoFar {
  const byObjective = objective !== 'energy';
  if (final && final.changes.length) {
    const f = byObjective ? finalFigures(final, baseline, 0) : null;
    return f
      ? { samplesPerSec: f.candidate, ci: f.candidateCi, source: `the baseline as re-measured in the final comparison (${Math.round(f.best).toLocaleString('en-US')} samples/s) times the final speedup`, label: 'final: kept changes', drift: null }
      : { samplesPerSec: final.samplesPerSec.median, ci: final.samplesPerSec, source: 'the final comparison with the baseline', label: 'final: kept changes', drift: null };
  }
  for (let i = trials.length - 1; i >= 0; i--) {
    const t = trials[i];
    const side = t.kept ? t.candidateSamplesPerSec : t.bestSamplesPerSec;
    if (!side.length) continue;
    const fig = byObjective ? trialFigures(t) : null;
    if (t.kept) {
      const value = fig ? fig.candidate : median(side);
      const source = fig ? `trial ${t.index}'s current best (median of ${fig.pairs} pairs) times its speedup` : `median of trial ${t.index}'s ${side.length} repetition(s) of the kept candidate`;
      return { samplesPerSec: value, ci: null, source, label: `kept in trial ${t.index}`, drift: null };
    }
    const value = median(side);
    const source = `median of trial ${t.index}'s ${side.length} repetition(s) of the current best`;
    if (trials.slice(0, i).some((u) => u.kept)) return { samplesPerSec: value, ci: null, source, label: `current best, re-measured in trial ${t.index}`, drift: null };
    // Every trial so far compared against the baseline's own configuration (nothing was kept before this one).
    const again = trials.slice(0, i + 1).flatMap((u) => (u.bestSamplesPerSec.length ? [{ index: u.index, samplesPerSec: median(u.bestSamplesPerSec) }] : []));
    return { samplesPerSec: value, ci: null, source, label: `baseline, re-measured in trial ${t.index}`, drift: driftOf(baseline, again) };
  }
  return { samplesPerSec: baseline.samplesPerSec.median, ci: baseline.samplesPerSec, source: 'the baseline (nothing kept yet)', label: 'current best: the baseline', drift: null };
}

export type LimitsChartInput = {
  baseline: Pick<OptimiseBaseline, 'samplesPerSec'>;
  best: BestSoFar;
  limits: Pick<Limits, 'compute' | 'read' | 'h2d'>;
};

/** One bar of the limits chart; `samplesPerSec` null when the floor could not be measured. */
export interface LimitBar {
  name: string;
  samplesPerSec: number | null;
  ci: { low: number; high: number; coverage?: number } | null;
  colour: string;
  /** Why a bar is missing, or how a floor was computed. */
  note: string;
}

/** The data floor is the slower of reading the batch and copying it to the device, where each was measured. */
function dataFloor(limits: LimitsChartInput['limits']): { samplesPerSec: number | null; note: string } {
  const measured = [
    { name: 'read', l: limits.read },
    { name: 'host-to-device copy', l: limits.h2d },
  ].filter((x) => x.l.samplesPerSec !== null);
  if (!measured.length) return { samplesPerSec: null, note: `not measured: ${limits.read.derivation}` };
  const slowest = measured.reduce((a, b) => ((b.l.samplesPerSec as number) < (a.l.samplesPerSec as number) ? b : a));
  return { samplesPerSec: slowest.l.samplesPerSec, note: `${slowest.name}: ${slowest.l.derivation}` };
}

export function limitBars(input: LimitsChartInput): LimitBar[] {
  const data = dataFloor(input.limits);
  const c = input.limits.compute;
  const b = input.baseline.samplesPerSec;
  return [
    { name: 'baseline', samplesPerSec: b.median, ci: { low: b.low, high: b.high, coverage: b.coverage }, colour: '#8b98a5', note: `median of the baseline repetitions, ${intervalLevel(b)} CI` },
    { name: input.best.label, samplesPerSec: input.best.samplesPerSec, ci: input.best.ci, colour: input.best.drift ? '#d29922' : '#4fb3ff', note: input.best.drift ? `${input.best.source}; ${input.best.drift}` : input.best.source },
    { name: 'data floor', samplesPerSec: data.samplesPerSec, ci: null, colour: '#f85149', note: data.note },
    { name: 'compute floor', samplesPerSec: c.samplesPerSec, ci: null, colour: '#a371f7', note: c.samplesPerSec === null ? `not measured: ${c.derivation}` : c.derivation },
  ];
}

/**
 * The baseline and the current best (labelled with what it is) beside what each floor allows, in samples/s (a floor's bar is the
 * most samples/s its hardware allows, so the gap to it is the room left). Log scale: a data floor is
 * often hundreds of times the baseline. A floor that was not measured keeps its place, marked so.
 */
export function limitsOption(input: LimitsChartInput): EChartsCoreOption {
  const bars = limitBars(input);
  // The value sits under its bar's name: a label on the bar would collide with the error bar's cap.
  const names = bars.map((b) => `${b.name}\n${b.samplesPerSec === null ? '(not measured)' : formatValue(b.samplesPerSec, 'samples/s')}`);
  return {
    animation: false,
    title: title('Samples/s: the baseline, the current best, and what each floor allows (log scale)'),
    tooltip: { ...tooltip('samples/s', 'item') },
    grid: { left: 70, right: 16, top: 50, bottom: 70 },
    // Two-line labels need their line height set, or the lines are drawn over each other.
    // A long name ("baseline, re-measured in trial 3") breaks within its bar's width instead of running into the next.
    xAxis: { type: 'category', data: names, axisLabel: { ...axisLabel, interval: 0, lineHeight: 14, width: 110, overflow: 'break' }, axisLine: { lineStyle: { color: GRID_LINE } } },
    // From the power of ten below the smallest bar, so the bars differ visibly (from 1 they all look tall).
    yAxis: { type: 'log', min: (e: { min: number }) => 10 ** Math.floor(Math.log10(Math.max(1, e.min))), name: 'samples/s', nameTextStyle: { color: MUTED }, axisLabel: { ...axisLabel, formatter: (v: number) => formatValue(v) }, splitLine: { lineStyle: { color: GRID_LINE } } },
    series: [
      {
        name: 'samples/s',
        type: 'bar',
        barMaxWidth: 64,
        data: bars.map((b) => (b.samplesPerSec === null ? null : { value: Math.round(b.samplesPerSec), itemStyle: { color: b.colour } })),
      },
      {
        name: `${intervalLevels(bars.filter((b) => b.ci).map((b) => b.ci))} CI`,
        type: 'custom',
        renderItem: errorBar,
        encode: { x: 0, y: [1, 2] },
        z: 10,
        tooltip: { show: false },
        data: bars.flatMap((b, i) => (b.ci ? [[i, Math.round(b.ci.low), Math.round(b.ci.high)]] : [])),
      },
    ],
  };
}

export function limitsLabel(input: LimitsChartInput): string {
  const bars = limitBars(input);
  return `Limits chart in samples/s: ${bars.map((b) => `${b.name} ${b.samplesPerSec === null ? 'not measured' : formatValue(b.samplesPerSec, 'samples/s')}`).join('; ')}`;
}

/** How the loss guard went, in one line: what it compared and with which seed, or why it could not. */
export function lossCheckText(c: ScriptOptimiseResult['target']['lossCheck'], preset: ScriptOptimiseResult['preset']): string {
  if (!c) return 'not checked (a run from before the loss guard)';
  const seeded = c.seededBy === 'script' ? `the script seeds itself (${c.where ?? 'where unknown'})` : `seed ${c.seed}, set by Trainbench as torch was imported`;
  if (c.unchecked) return `not checked: ${c.unchecked}; changes were kept on their speed alone (${seeded})`;
  const within =
    preset === 'reproducible'
      ? 'leaves the mean loss over the measured steps as it was'
      : `keeps the mean loss over the measured steps within ${(100 * c.tolerance).toFixed(1)}%${preset === 'max-speed' ? ` (${(400 * c.tolerance).toFixed(1)}% for a numerics change)` : ''}`;
  return `a kept change ${within}; ${seeded}`;
}

/** A compile trial's cost and pay-off, in one line. */
export function compileText(c: TrialCompile): string {
  const payoff = c.payoffSteps === null ? 'never pays off (the compiled step is not faster)' : `pays off after ${c.payoffSteps.toLocaleString('en-US')} steps`;
  const recompiled = c.inMeasuredSteps ? `, ${c.inMeasuredSteps} recompilation(s) in the measured steps` : '';
  if (c.coldSeconds !== undefined) {
    const cold = c.coldPayoffSteps == null ? '' : ` (${c.coldPayoffSteps.toLocaleString('en-US')} from cold)`;
    return `compile ${c.coldSeconds.toFixed(1)} s the first launch (caches cold), ${c.seconds.toFixed(1)} s each launch after (${c.compilations} compilations${recompiled}); ${payoff}${cold}`;
  }
  return `compile ${c.seconds.toFixed(1)} s per launch (${c.compilations} compilations${recompiled}); ${payoff}`;
}
