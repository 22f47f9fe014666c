// The optimisation wizard's run in a report, either target: the trials figure, one attempt per trial,
// the changes it did not try, and its decision. What differs by target (how a setting is named and
// kept, who reported a crash) comes from wizardView; the rest is written once.
import type { BenchmarkPhases } from '../../api/benchmark';
import { CONDITIONS_HEAD, conditionsTable } from '../../api/confounders';
import type { ConditionsRow, OptimiseFinal, OptimiseTrial, SkippedChange, TrialDecision } from '../../api/optimise';
import { compileText, trialsLabel, trialsOption } from '../../api/charts/optimise-charts';
import { overrideCode } from '../../api/script-override-code';
import { ciLevel, orderIntervalCoverage, pairsToDecide } from '../../api/order-interval';
import { settingWords } from '../../api/run-config';
import { finalFigures, trialFigures } from '../../api/paired-figures';
import type { Interval } from '../stats/medians';
import { medianInterval } from '../stats/medians';
import { code, fmt, signedPercent, table } from './markdown';
import type { FigureSpec } from './report-model';
import type { OptimiseRun, ScriptOptimiseRun } from './report-runs';
import { runSlug } from './run-slug';

/** A wizard's run as the report reads it, whichever target it optimised. */
export interface WizardView {
  id: string;
  /** The trials figure keeps the file name reports written before link. */
  figureName: string;
  /** Who reported a crash or an OOM. */
  said: string;
  baseline: { samplesPerSec: Interval; noiseFloor: number; phasesMs: BenchmarkPhases; stepMs: number; device: string; batchSize: number; accumulation: number };
  trials: OptimiseTrial[];
  skipped: SkippedChange[];
  final: Omit<OptimiseFinal, 'config'>;
  /** Pairs of the final A/B/A/B: the request's repeat. */
  repeat: number;
  /** What the trials compared: samples/s, or samples per joule of GPU energy. */
  objective: 'throughput' | 'energy';
  /** The settings the final changed, as [setting, the baseline's value, the value to use], under these headings. */
  changed: string[][];
  changedHead: [string, string, string];
  /** Where a target keeps its changes in code (a script's lines to paste), with its lead; empty for the engine. */
  code: { lead: string; lines: string[] };
  /** What to use when nothing changed. */
  unchanged: string;
  /** Each proposed (not kept) change as code and the flag that applies it; empty where a target has none. */
  proposedCode: string[];
}

const json = (v: unknown) => JSON.stringify(v);

export function engineWizardView(run: OptimiseRun): WizardView {
  const r = run.result;
  const base = r.target.baseline.config;
  const use = r.target.final.config;
  const options = (c: typeof base) => c.options as Record<string, unknown>;
  const changed = Object.keys(use.options)
    .filter((k) => json(options(use)[k]) !== json(options(base)[k]))
    .map((k) => [settingWords(k), json(options(base)[k]), json(options(use)[k])]);
  if (use.readFrom !== base.readFrom) changed.push(['read from', base.readFrom, use.readFrom]);
  return {
    id: run.id,
    figureName: `trials-${runSlug(run.id)}.svg`,
    said: 'The engine said',
    baseline: { ...r.baseline, batchSize: base.options.batchSize, accumulation: base.options.accumulation },
    trials: r.trials,
    skipped: r.skipped,
    final: r.final,
    repeat: r.repeat,
    objective: r.objective ?? 'throughput',
    changed,
    changedHead: ['Setting', 'Baseline', 'Use'],
    code: { lead: '', lines: [] },
    unchanged: "Configuration to use: the baseline's, unchanged.",
    proposedCode: [],
  };
}

/** The baseline's value of a setting: its override, else what the script's first DataLoader was made with. */
function asRun(run: ScriptOptimiseRun, key: string): string {
  const o = run.result.target.baseline.overrides[key];
  if (o !== undefined) return `${String(o)} (overridden)`;
  const loader = run.result.target.loader as Record<string, unknown> | null;
  const made = key.startsWith('dataloader.') ? loader?.[key.slice('dataloader.'.length)] : undefined;
  return made === undefined || made === null ? 'not seen by the probe' : String(made);
}

export function scriptWizardView(run: ScriptOptimiseRun): WizardView {
  const r = run.result;
  const base = r.target.baseline.overrides;
  const changed = Object.entries(r.target.final?.overrides ?? {}).filter(([k, v]) => base[k] !== v);
  return {
    id: run.id,
    figureName: `script-trials-${runSlug(run.id)}.svg`,
    said: 'The script said',
    baseline: { ...r.baseline, batchSize: r.target.loader?.batch_size ?? 0, accumulation: 1 },
    trials: r.trials,
    skipped: r.skipped,
    final: r.final,
    repeat: r.repeat,
    objective: r.objective ?? 'throughput',
    changed: changed.map(([k, v]) => [k, asRun(run, k), code(overrideCode({ [k]: v }, { device: r.baseline.device })[0] ?? `${k}=${String(v)}`)]),
    changedHead: ['Setting', 'In your script', 'Use'],
    code: { lead: 'In your script (or keep passing them with `--set`):', lines: changed.length ? overrideCode(Object.fromEntries(changed), { device: r.baseline.device }) : [] },
    unchanged: r.trials.some((t) => t.decision === 'confounded') ? 'Use: your script as it is; no change was kept.' : 'Use: your script as it is; no change beat the noise.',
    proposedCode: r.trials
      .filter((t) => t.decision === 'proposed')
      .map((t) => {
        const value = t.change.to as string | number | boolean;
        const line = overrideCode({ [t.change.knob]: value }, { device: r.baseline.device })[0] ?? '';
        return `${line}  # or: --set ${t.change.knob}=${String(value)}`;
      }),
  };
}


/** A paired speedup over `pairs` A/B pairs, naming its interval's true coverage (93.8% for 5 pairs, not 95%). */
export function pairedSpeedupText(s: Interval, pairs: number): string {
  return `${signedPercent(s.median - 1)} (${ciLevel(orderIntervalCoverage(pairs))} CI ${signedPercent(s.low - 1)} to ${signedPercent(s.high - 1)})`;
}

const TRIAL_CONCLUSIONS: Record<TrialDecision, string> = {
  accept: 'Accepted and kept: faster by more than the noise, with the loss within the tolerance.',
  reject: 'Rejected: slower, with the whole interval below 1.',
  inconclusive: 'Not kept: the difference could be noise.',
  crashed: 'Not kept: the trial did not finish.',
  'changes-results': 'Not kept: it moved the training loss beyond the tolerance.',
  proposed: 'Proposed, not kept: faster beyond the noise, but it changes the training recipe, which this wizard run was not allowed to keep.',
  confounded: 'Not decided: the machine was doing something else during one side of a pair, and still was when the pair was measured again (see Conditions).',
};

/** A trial's conclusion; a kept change whose loss was not measured (a script target) says so instead of claiming it. */
export function trialConclusion(t: Pick<OptimiseTrial, 'decision' | 'lossDelta' | 'lean' | 'bestSamplesPerSec' | 'candidateSamplesPerSec'> & { change?: Pick<OptimiseTrial['change'], 'kind'> }): string {
  if (t.decision === 'inconclusive' && t.lean) {
    const level = ciLevel(orderIntervalCoverage(Math.min(t.bestSamplesPerSec.length, t.candidateSamplesPerSec.length)));
    return `Not kept: leaning ${t.lean} on a ${level} interval, too few pairs to keep or reject a change (${pairsToDecide()} or more decide).`;
  }
  if (t.decision === 'accept' && t.lossDelta === null) return 'Accepted and kept: faster by more than the noise; its effect on the loss was not measured.';
  // A recipe change (batch size, accumulation) trains differently by design: the loss guard does not hold it to the tolerance.
  if (t.decision === 'accept' && t.change?.kind === 'recipe') {
    return `Accepted and kept: faster by more than the noise. As a change of the training recipe it is not held to the loss tolerance (the mean loss moved ${signedPercent(t.lossDelta!)}); check that the training still converges.`;
  }
  return TRIAL_CONCLUSIONS[t.decision];
}

/**
 * The trial's figures as the speedup gives them (paired-figures.ts): the current best's median over the pairs, the
 * candidate as that times the speedup, and the speedup with its interval; then energy, loss and compile.
 */
function trialRows(t: OptimiseTrial, objective: WizardView['objective']): string[][] {
  const f = trialFigures(t, objective);
  const pairs = Math.min(t.bestSamplesPerSec.length, t.candidateSamplesPerSec.length);
  const unit = objective === 'energy' ? 'samples per joule of GPU energy' : 'samples/s';
  return [
    [`${unit} (current best: median over the pairs; candidate: that times the speedup)`, f ? fmt(f.best) : '-', f ? fmt(f.candidate) : '-', t.speedup ? pairedSpeedupText(t.speedup, pairs) : 'not measured'],
    ['pairs (A/B interleaved)', String(t.bestSamplesPerSec.length), String(t.candidateSamplesPerSec.length), ''],
    // Energy per sample beside speed, for every trial that read the GPUs' power (issue 26): each side's own median, a figure the speedup does not claim.
    ...(objective !== 'energy' && t.bestSamplesPerJoule?.length && t.candidateSamplesPerJoule?.length
      ? [['samples per joule of GPU energy, median of each side', fmt(medianInterval(t.bestSamplesPerJoule).median), fmt(medianInterval(t.candidateSamplesPerJoule).median), '']]
      : []),
    ['mean loss over the measured steps', '', '', t.lossDelta === null ? 'not measured' : `${signedPercent(t.lossDelta)} relative`],
    ...(t.compile?.coldSeconds !== undefined ? [['compile time of the first launch (caches cold, run before the pairs)', '', `${fmt(t.compile.coldSeconds)} s`, '']] : []),
    ...(t.compile ? [['compile time per launch (first steps, not measured)', '', `${fmt(t.compile.seconds)} s`, compileText(t.compile)]] : []),
  ];
}

/** Every pair of the trial with its ratio: the speedup above is the median of these ratios. */
function pairRows(t: OptimiseTrial, objective: WizardView['objective']): string[][] {
  const energy = objective === 'energy';
  const best = (energy ? t.bestSamplesPerJoule : t.bestSamplesPerSec) ?? [];
  const cand = (energy ? t.candidateSamplesPerJoule : t.candidateSamplesPerSec) ?? [];
  const rows: string[][] = [];
  for (let i = 0; i < Math.min(best.length, cand.length); i++) rows.push([String(i + 1), fmt(best[i]), fmt(cand[i]), `${(cand[i] / best[i]).toFixed(3)}x`]);
  return rows;
}

/** The machine around each repetition (issue 26): what else ran, the clocks, the GPU's slowdowns; absent in older runs. */
export function conditionsLines(rows: readonly ConditionsRow[] | undefined): string[] {
  if (!rows?.some((r) => r.conditions !== null)) return [];
  return [
    '#### Conditions',
    '',
    'What else the machine did during each repetition. A pair whose two sides saw different conditions was measured again (at most twice); one that still differed leaves the trial undecided.',
    '',
    table([...CONDITIONS_HEAD], conditionsTable(rows)),
    '',
  ];
}

/** One wizard trial as the n-th attempt of the report. */
export function wizardAttemptBody(n: number, view: WizardView, t: OptimiseTrial): string {
  const c = t.change;
  return [
    `### Attempt ${n}: ${c.label} (wizard trial ${t.index}, ${code(view.id)})`,
    '',
    view.objective === 'energy'
      ? `**Objective**: measure whether ${c.label} trains more samples per joule of GPU energy than the wizard's current best configuration (the wizard's energy objective: the speedup below is of samples/J).`
      : `**Objective**: measure whether ${c.label} makes the step faster than the wizard's current best configuration.`,
    '',
    `**Configuration**: ${c.label} (a ${c.kind} change${c.label.startsWith(c.knob) || c.label.startsWith(settingWords(c.knob)) ? '' : ` of the ${settingWords(c.knob)}`}) on top of the current best${c.note ? `; ${c.note}` : ''}.`,
    '',
    `**Hypothesis** (the wizard's, from its diagnosis): ${c.hypothesis}.`,
    '',
    '**Results**:',
    '',
    table(['Metric', 'Current best', 'Candidate', 'Change'], trialRows(t, view.objective)),
    '',
    ...(pairRows(t, view.objective).length ? [table(['Pair', 'Current best', 'Candidate', 'Ratio'], pairRows(t, view.objective)), ''] : []),
    ...conditionsLines(t.conditions),
    `**Analysis**: ${t.why[0].toUpperCase()}${t.why.slice(1)}.${t.error ? ` ${view.said}: ${t.error}.` : ''} The speedup is the median of the pairs' ratios, with the paired order-statistic interval; the candidate's figure is the current best's median times it.`,
    '',
    `**Conclusion**: ${trialConclusion(t)}`,
  ].join('\n');
}

/** Samples/s of the baseline, of every trial's candidate and of the final configuration, each with its CI. */
/**
 * The trials as the Optimise page draws them: each trial's speedup over the best it was measured against, with
 * its interval, coloured by its decision. Bars of each side's samples/s read wrongly where the machine's load
 * moved between trials (a trial 1.03x faster than a best re-measured at half the baseline's rate drew as a bar
 * at half the baseline), and a tall bar of a change not kept read as the winner.
 */
export function wizardTrialsFigure(view: WizardView): FigureSpec | null {
  const trials = view.trials.filter((t) => t.speedup);
  if (!trials.length) return null;
  const of = view.objective === 'energy' ? 'samples per joule' : 'samples/s';
  return {
    name: view.figureName,
    title: `Speedup (${of}) of each trial over the current best it was measured against, with its decision`,
    alt: trialsLabel(trials),
    runId: view.id,
    option: trialsOption(trials, view.baseline.noiseFloor),
    height: 380,
  };
}

export function wizardSkippedLines(view: WizardView): string[] {
  if (!view.skipped.length) return [];
  return [`Changes the wizard did not try (${code(view.id)}):`, '', ...view.skipped.map((x) => `- ${x.change.label}: ${x.why}.`)];
}

/**
 * The final verdict as saved. Run files written before issue 27 said "No change beat the noise" where a
 * recipe change did and was only proposed: their report says what happened instead.
 */
function savedVerdict(view: WizardView): string {
  const v = view.final.verdict;
  const old = 'No change beat the noise';
  return v.startsWith(old) && view.trials.some((t) => t.decision === 'proposed') ? `No change was kept${v.slice(old.length)} A recipe change beat the noise and is proposed below.` : v;
}

export function wizardDecisionLines(view: WizardView): string[] {
  const f = view.final;
  const lines = [`The wizard's verdict (${code(view.id)}, from its run file): ${savedVerdict(view)}`];
  if (f.changes.length) {
    const figures = finalFigures(f, view.baseline, view.repeat, view.objective);
    const sides = figures ? `; the baseline re-measured in that comparison ${fmt(figures.best, 'samples/s')}, the final configuration ${fmt(figures.candidate, 'samples/s')} (that times the speedup)` : '';
    lines.push('', `Kept, in order: ${f.changes.join('; ')}. Final against baseline, measured A/B/A/B at the end: ${pairedSpeedupText(f.speedup, view.repeat)}${sides}.`);
    const conditions = conditionsLines(f.conditions);
    if (conditions.length) lines.push('', ...conditions.slice(0, -1));
  }
  if (view.changed.length) {
    lines.push('', 'Configuration to use:', '', table([...view.changedHead], view.changed));
    if (view.code.lines.length) lines.push('', view.code.lead, '', '```python', ...view.code.lines, '```');
  } else if (f.proposals.length) {
    // "No change beat the noise" would hide the proposed win below (issue 27).
    lines.push('', 'Nothing was kept: the changes that beat the noise change the training recipe (below); apply one with its learning-rate rule, or run the wizard again allowing recipe changes to keep it.');
  } else {
    lines.push('', view.unchanged);
  }
  if (f.proposals.length) lines.push('', 'Proposed, not kept (they change the training recipe):', '', ...f.proposals.map((p) => `- ${p}`));
  if (f.proposals.length && view.proposedCode.length) lines.push('', 'To apply a proposed change in your script:', '', '```python', ...view.proposedCode, '```');
  return lines;
}
