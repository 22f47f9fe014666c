// One section per attempt (objective, configuration, hypothesis, results, analysis, conclusion), for both targets.
import { intervalLevel, intervalLevels } from '../../api/order-interval';
import { THROUGHPUT_NOISE, TRIAL_OUTCOME_WORDS } from '../../api/batch-size';
import { batchSizeLabel, batchSizeOption } from '../../api/charts/batch-size-charts';
import { PHASE_NAMES_WITH_OTHER } from '../../api/benchmark';
import { usableBytesOf } from '../../api/batch-size';
import { settingWords } from '../../api/run-config';
import { commandText } from '../targets/script/script-benchmark';
import type { Interval } from '../stats/medians';
import { relativeHalfWidth } from '../stats/medians';
import { ratioInterval } from '../stats/ratio-interval';
import type { Decision } from '../stats/decision';
import { decideOnRepetitions } from '../stats/decision';
import type { BenchmarkAttempt, SearchAttempt } from './attempts';
import { recommendsBaselineBatch } from './attempts';
import { engineWizardView, scriptWizardView, wizardAttemptBody, wizardSkippedLines, wizardTrialsFigure } from './section-wizard';
import { changeText, ci, code, figureLink, fmt, MB, MiB, speedupText, table } from './markdown';
import type { FigureSpec, ReportInput, SectionOutput } from './report-model';
import { bothTargets } from './report-model';
import type { ScriptBatchRun, ScriptBenchmarkRun } from './report-runs';
import { overridesOf, overridesText, scriptBenchmarks } from './report-runs';
import { runSlug } from './run-slug';

const change = changeText;

export const CONCLUSIONS: Record<BenchmarkAttempt['decision'], string> = {
  accept: 'Accepted: faster by more than the run-to-run noise.',
  reject: 'Rejected: slower, with the whole interval below the baseline.',
  inconclusive: 'Not shown: the difference could be noise, so these runs do not support keeping the change.',
};

function benchmarkAttemptBody(n: number, a: BenchmarkAttempt): string {
  const b = a.baseline.result;
  const r = a.run.result;
  const settings = a.changes.filter((c) => !c.protocol);
  const protocol = a.changes.filter((c) => c.protocol);
  const what = settings.length ? settings.map((c) => `${settingWords(c.setting)} ${c.baseline} → ${c.attempt}`).join(', ') : 'no setting changed (a repeat of the baseline)';
  const s = a.speedup;
  const rows = [
    ['samples/s, median', fmt(b.samplesPerSecCi.median), fmt(r.samplesPerSecCi.median), speedupText(s)],
    [`samples/s, ${intervalLevels([b.samplesPerSecCi, r.samplesPerSecCi])} CI`, ci(b.samplesPerSecCi), ci(r.samplesPerSecCi), ''],
    ['step time, steady state (ms)', fmt(b.stepTime.steadyStateMeanMs), fmt(r.stepTime.steadyStateMeanMs), change(b.stepTime.steadyStateMeanMs, r.stepTime.steadyStateMeanMs)],
    ['step time, wall clock (ms)', fmt(b.stepTime.wallClockMeanMs), fmt(r.stepTime.wallClockMeanMs), change(b.stepTime.wallClockMeanMs, r.stepTime.wallClockMeanMs)],
    ['predicted epoch, steady state (s)', fmt(b.target.predictedEpochSeconds.fromSteadyState), fmt(r.target.predictedEpochSeconds.fromSteadyState), change(b.target.predictedEpochSeconds.fromSteadyState, r.target.predictedEpochSeconds.fromSteadyState)],
    ['training memory, measured (MB)', fmt(b.target.memory.measured.total / MB), fmt(r.target.memory.measured.total / MB), change(b.target.memory.measured.total, r.target.memory.measured.total)],
  ];
  const analysis = [
    `The speedup's interval comes from the ${b.repetitions.length} x ${r.repetitions.length} ratios of a repetition of this run to one of the baseline (Mann-Whitney); the baseline's noise floor (half its CI's width relative to its median) is ${fmt(100 * a.noiseFloor, '%')}. ${a.why[0].toUpperCase()}${a.why.slice(1)}.`,
  ];
  const p = a.largestPhaseChange;
  if (p) analysis.push(`The phase that moved most is \`${p.phase}\`: ${fmt(p.baseline)} → ${fmt(p.attempt)} ${p.unit} (${change(p.baseline, p.attempt)}).`);
  if (settings.length > 1) analysis.push(`${settings.length} settings differ from the baseline at once, so these runs cannot say which of them made the difference.`);
  if (protocol.length) analysis.push(`It was measured differently from the baseline (${protocol.map((c) => `${settingWords(c.setting)} ${c.baseline} → ${c.attempt}`).join(', ')}); the steady-state figures compare, the wall-clock ones include a different share of warm-up.`);
  const envA = a.baseline.record.environment;
  const envB = a.run.record.environment;
  if (envA && envB && (envA.hostname !== envB.hostname || envA.cpuModel !== envB.cpuModel)) analysis.push('The two runs ran on different machines, so the difference includes the machine.');
  return [
    `### Attempt ${n}: ${what} (${code(a.run.id)})`,
    '',
    `**Objective**: measure samples/s with ${what}, against the baseline ${code(a.baseline.id)}.`,
    '',
    '**Configuration**:',
    '',
    a.changes.length ? table(['Setting', 'Baseline', 'Attempt'], a.changes.map((c) => [settingWords(c.setting), c.baseline, c.attempt])) : 'Identical to the baseline.',
    '',
    '**Hypothesis**: none recorded; a benchmark run does not say why it was run.',
    '',
    '**Results**:',
    '',
    table(['Metric', 'Baseline', 'Attempt', 'Change'], rows),
    '',
    `**Analysis**: ${analysis.join(' ')}`,
    '',
    `**Conclusion**: ${CONCLUSIONS[a.decision]}${recipeNote(a)}`,
  ].join('\n');
}

/** An accepted change of the recipe is faster, but these runs measure speed only. */
function recipeNote(a: BenchmarkAttempt): string {
  if (!a.recipeChanges.length) return '';
  return ` It changes the training recipe (${a.recipeChanges.join(', ')}), so what it trains to must be checked too (learning rate, accuracy): these runs measure speed only.`;
}

/** The benchmark attempt that measured a batch with repetitions, if any. */
/**
 * The attempt that measured `batch` with repetitions: a benchmark at that batch, or a wizard trial that changed
 * the batch to it (its A/B pairs are repetitions too). Null when none did.
 */
export function measurementOfBatch(input: ReportInput, batch: number | null): { n: number; words: string } | null {
  if (batch === null) return null;
  const i = input.attempts.findIndex(
    (a) =>
      (a.kind === 'benchmark' && a.run.result.batchSize === batch && a.run.result.target.accumulation === 1) ||
      (a.kind === 'optimise-trial' && a.trial.change.knob === 'batchSize' && a.trial.change.to === batch && a.trial.candidateSamplesPerSec.length > 0),
  );
  if (i < 0) return null;
  const a = input.attempts[i];
  const how = a.kind === 'optimise-trial' ? ` (wizard trial ${a.trial.index}, ${a.trial.candidateSamplesPerSec.length} A/B pairs)` : '';
  return { n: i + 1, words: `attempt ${i + 1}${how}` };
}

function searchAttemptBody(n: number, a: SearchAttempt, input: ReportInput): { body: string; figure: FigureSpec } {
  const r = a.run.result;
  const figure: FigureSpec = { name: `batch-size-${runSlug(a.run.id)}.svg`, title: 'Throughput and memory by batch size', alt: batchSizeLabel(r.trials), runId: a.run.id, option: batchSizeOption(r.trials, r.target.usableBytes) };
  // On the CPU the engine's accounting repeats its prediction: what was measured there is the process as the OS counted it.
  const processPeak = (t: (typeof r.trials)[number]) => (t.target.kind === 'engine' ? t.target.processPeakRssBytes : null);
  const cpu = r.trials.some((t) => processPeak(t) !== null);
  const measured = (t: (typeof r.trials)[number]) => (cpu ? processPeak(t) : t.peakBytes);
  const trials = table(
    ['Batch', 'Outcome', 'samples/s', 'Predicted MiB', cpu ? 'Process peak MiB (as the OS counts it)' : 'Measured MiB', 'Fits the headroom'],
    r.trials.map((t) => [
      t.accumulation > 1 ? `${fmt(t.batchSize)} × ${t.accumulation}` : fmt(t.batchSize),
      // In words, as the Batch size page says them ("out of memory", not E_OOM).
      TRIAL_OUTCOME_WORDS[t.outcome],
      t.samplesPerSec === null ? '-' : fmt(t.samplesPerSec),
      t.target.kind === 'engine' ? fmt(t.target.predicted.total / MiB) : '-',
      measured(t) === null ? '-' : fmt((measured(t) as number) / MiB),
      t.fits ? 'yes' : 'no',
    ]),
  );
  const steps = (a.run.record.config as { stepsPerTrial?: number }).stepsPerTrial;
  const given = (a.run.record.config as { options?: { batchSize?: number } }).options?.batchSize;
  const chosen = r.trials.find((t) => t.batchSize === r.recommended && t.accumulation === 1 && t.outcome === 'ok');
  const below = [...new Set(r.trials.filter((t) => t.batchSize < r.target.seedBatch).map((t) => t.batchSize))].sort((x, y) => x - y).map((b) => fmt(b));
  const results: string[] = [trials, '', figureLink(figure.alt, figure.name), ''];
  let conclusion: string;
  if (a.baseline && recommendsBaselineBatch(a)) {
    // A short trial beside repetitions of the same setting would read as a gain or loss that is only noise and warm-up.
    const b = a.baseline.result;
    results.push(`The baseline ${code(a.baseline.id)} already trains with batch ${fmt(b.batchSize)}.`, '');
    conclusion = `No change: the search recommends batch ${fmt(b.batchSize)}, the batch the baseline already uses.${chosen?.samplesPerSec != null ? ` Its trial (${steps ?? 'a few'} steps, once) measured ${fmt(chosen.samplesPerSec, 'samples/s')}; the baseline's median over its repetitions, ${fmt(b.samplesPerSecCi.median, 'samples/s')}, is the figure to go by.` : ''}`;
  } else if (a.baseline && chosen?.samplesPerSec != null) {
    const b = a.baseline.result;
    results.push(
      table(
        ['Metric', `Baseline ${code(a.baseline.id)}`, `Recommended batch ${fmt(chosen.batchSize)}`, 'Change'],
        [
          ['batch size', fmt(b.batchSize * b.target.accumulation), fmt(chosen.batchSize), change(b.batchSize * b.target.accumulation, chosen.batchSize)],
          ['samples/s', `${fmt(b.samplesPerSecCi.median)} (${intervalLevel(b.samplesPerSecCi)} CI ${ci(b.samplesPerSecCi)})`, `${fmt(chosen.samplesPerSec)} (one trial, no CI)`, change(b.samplesPerSecCi.median, chosen.samplesPerSec)],
          ['training memory (MiB)', fmt(b.target.memory.measured.total / MiB), chosen.peakBytes === null ? '-' : fmt(chosen.peakBytes / MiB), chosen.peakBytes === null ? '' : change(b.target.memory.measured.total, chosen.peakBytes)],
        ],
      ),
      '',
    );
    const measured = measurementOfBatch(input, chosen.batchSize);
    const next = measured
      ? `${measured.words} measures batch ${fmt(chosen.batchSize)} with repetitions.`
      : `benchmark batch ${fmt(chosen.batchSize)} with repetitions to decide. A larger batch also changes the training recipe (learning rate).`;
    conclusion = `Proposed, not accepted on its own: batch ${fmt(chosen.batchSize)} measured ${change(b.samplesPerSecCi.median, chosen.samplesPerSec)} samples/s against the baseline, but a trial is one measurement of ${steps ?? 'a few'} steps without repetitions, so it cannot say whether that beats the noise; ${next}`;
  } else {
    results.push(a.baseline ? 'No batch fitted, so there is nothing to compare with the baseline.' : 'No benchmark of the same model, data and device is among these runs, so the recommended batch is not compared with a baseline.', '');
    conclusion = r.recommended === null ? 'No batch fits the memory with the headroom asked for.' : `Proposed: batch ${fmt(r.recommended)}, as the search recommends; not compared with a baseline measured with repetitions.`;
  }
  const body = [
    `### Attempt ${n}: batch-size search (${code(a.run.id)})`,
    '',
    `**Objective**: find the largest batch that fits in ${fmt(r.capacityBytes / MiB, 'MiB')} (${r.target.capacitySource === 'memory-limit' ? 'a memory limit on the CPU' : 'the device memory'}) with ${fmt(100 * r.headroom, '%')} kept free, and the smallest batch within ${fmt(100 * THROUGHPUT_NOISE, '%')} of the fastest.`,
    '',
    `**Configuration**: device ${r.device}; data ${r.target.data}; ${steps ?? 'an unrecorded number of'} optimizer steps measured per trial; search started at batch ${fmt(r.target.seedBatch)} (the largest power of two the memory model fits)${below.length ? `; measured below it: ${below.join(', ')}` : ''}.`,
    '',
    '**Hypothesis**: none recorded; a search measures each batch rather than testing a stated expectation.',
    '',
    '**Results**:',
    '',
    ...results,
    // Its learning-rate advice is relative to the search's start: with the baseline's batch already, it would change an unchanged configuration.
    `**Analysis**: the search's verdict (from its run file): ${r.verdict}.${a.baseline && recommendsBaselineBatch(a) && r.verdict.includes('scale the LR') ? ` Its learning-rate advice is for a change from the batch the search was given${given ? ` (${fmt(given)})` : ''}; the baseline already trains with batch ${fmt(a.baseline.result.batchSize)}, so its learning rate stays as it is.` : ''}`,
    '',
    `**Conclusion**: ${conclusion}`,
  ].join('\n');
  return { body, figure };
}

function engineAttempts(input: ReportInput): SectionOutput {
  if (!input.attempts.length && !input.optimisations.length) {
    const why = input.baseline ? 'only the baseline benchmark was run' : 'there is no benchmark or batch-size search among these runs';
    return { blocks: [{ id: 'attempts', lead: '', body: `No attempts: ${why}, so nothing was changed and measured against a baseline.` }], figures: [], notes: [] };
  }
  const blocks = [];
  const figures: FigureSpec[] = [];
  for (const run of input.optimisations) {
    const view = engineWizardView(run);
    const figure = wizardTrialsFigure(view);
    const skipped = wizardSkippedLines(view);
    if (!figure && !skipped.length) continue;
    if (figure) figures.push(figure);
    const lines = figure ? [`The wizard's trials (${code(run.id)}): each one's speedup over the configuration it was measured against, with its interval, coloured by its decision, as the Optimise page draws it.`, '', figureLink(figure.alt, figure.name), ''] : [];
    blocks.push({ id: `trials-${runSlug(run.id)}`, lead: '', body: [...lines, ...skipped].join('\n') });
  }
  for (const [i, a] of input.attempts.entries()) {
    if (a.kind === 'benchmark') blocks.push({ id: `attempt-${runSlug(a.run.id)}`, lead: '', body: benchmarkAttemptBody(i + 1, a) });
    else if (a.kind === 'optimise-trial') blocks.push({ id: `attempt-${runSlug(a.run.id)}-${a.trial.index}`, lead: '', body: wizardAttemptBody(i + 1, engineWizardView(a.run), a.trial) });
    else {
      const { body, figure } = searchAttemptBody(i + 1, a, input);
      blocks.push({ id: `attempt-${runSlug(a.run.id)}`, lead: '', body });
      figures.push(figure);
    }
  }
  return { blocks, figures, notes: [] };
}

// The attempts on the user's own command: later benchmarks against its first, its batch-size searches, the wizard's trials.

export interface ScriptBenchmarkAttempt {
  run: ScriptBenchmarkRun;
  speedup: Interval;
  decision: Decision;
  why: string;
}

/** A later benchmark of the same command against the first: ratio of medians over the launches. */
export function scriptBenchmarkAttempts(input: ReportInput): ScriptBenchmarkAttempt[] {
  const [baseline, ...rest] = scriptBenchmarks(input);
  if (!baseline) return [];
  const sameCommand = (r: ScriptBenchmarkRun) => commandText(r.result.target.command) === commandText(baseline.result.target.command);
  return rest.filter(sameCommand).map((run) => {
    const speedup = ratioInterval(
      baseline.result.repetitions.map((x) => x.samplesPerSec),
      run.result.repetitions.map((x) => x.samplesPerSec),
    );
    return { run, speedup, ...decideOnRepetitions(speedup, relativeHalfWidth(baseline.result.samplesPerSecCi)) };
  });
}

function scriptBenchmarkAttemptBody(n: number, a: ScriptBenchmarkAttempt, baseline: ScriptBenchmarkRun): string {
  const b = baseline.result;
  const r = a.run.result;
  return [
    `### Attempt ${n}: ${overridesText(r.target.overrides)} (${code(a.run.id)})`,
    '',
    `**Configuration**: overrides ${overridesText(r.target.overrides)} against the baseline's ${overridesText(b.target.overrides)}; applied where the probe reported: ${r.target.applied.map((x) => `${x.key}=${String(x.value)} (${x.where})`).join(', ') || 'nothing to apply'}.`,
    '',
    '**Results**:',
    '',
    table(
      ['Metric', 'Baseline', 'Attempt'],
      [
        ['samples/s, median', fmt(b.samplesPerSec), fmt(r.samplesPerSec)],
        [`samples/s, ${intervalLevels([b.samplesPerSecCi, r.samplesPerSecCi])} CI`, ci(b.samplesPerSecCi), ci(r.samplesPerSecCi)],
        ['data wait', fmt(b.target.dataWait.percent, '%'), fmt(r.target.dataWait.percent, '%')],
        ['launches', String(b.repeat), String(r.repeat)],
      ],
    ),
    '',
    `**Analysis**: speedup ${speedupText(a.speedup)}; ${a.why}.`,
    '',
    `**Conclusion**: ${CONCLUSIONS[a.decision]}`,
  ].join('\n');
}

function scriptSearchBody(n: number, run: ScriptBatchRun): { body: string; figure: FigureSpec } {
  const r = run.result;
  const usable = usableBytesOf(r);
  const figure: FigureSpec = { name: `script-batch-size-${runSlug(run.id)}.svg`, title: 'Samples/s by batch size, your command', alt: batchSizeLabel(r.trials), runId: run.id, option: batchSizeOption(r.trials, usable) };
  const rows = r.trials.map((t) => [String(t.batchSize), TRIAL_OUTCOME_WORDS[t.outcome], t.samplesPerSec === null ? '-' : fmt(t.samplesPerSec), t.peakBytes === null ? '-' : fmt(t.peakBytes / MiB, 'MiB'), t.fits ? 'yes' : 'no', t.message ?? '']);
  return {
    body: [
      `### Attempt ${n}: the largest batch your command trains (${code(run.id)})`,
      '',
      `**Configuration**: dataloader.batch_size varied from ${r.trials[0]?.batchSize ?? '?'} (doubling to the first failure, then bisecting), other overrides ${overridesText(overridesOf(run))}; ${r.device === 'cpu' ? 'on the CPU a batch fits when it trains' : `a batch fits when its CUDA peak leaves ${fmt(100 * r.headroom, '%')} of the ${fmt((r.capacityBytes ?? 0) / MiB, 'MiB')} free`}.`,
      '',
      table(['Batch', 'Outcome', 'samples/s', 'CUDA peak', 'Fits', 'Message'], rows),
      '',
      figureLink(figure.alt, figure.name),
      '',
      `**Conclusion**: ${r.verdict}. A larger batch changes the training recipe (learning rate, schedule): treat it as a proposal to validate on the loss, not a free speedup.`,
    ].join('\n'),
    figure,
  };
}

function scriptAttempts(input: ReportInput): SectionOutput {
  const blocks: SectionOutput['blocks'] = [];
  const figures: FigureSpec[] = [];
  const baseline = scriptBenchmarks(input)[0];
  let n = 0;
  for (const a of scriptBenchmarkAttempts(input)) blocks.push({ id: `script-attempt-${runSlug(a.run.id)}`, lead: '', body: scriptBenchmarkAttemptBody(++n, a, baseline) });
  for (const run of input.scripts) {
    if (run.kind === 'script-batch-search') {
      const s = scriptSearchBody(++n, run);
      blocks.push({ id: `script-attempt-${runSlug(run.id)}`, lead: '', body: s.body });
      figures.push(s.figure);
    } else if (run.kind === 'script-optimise') {
      const r = run.result;
      const view = scriptWizardView(run);
      const trialsFigure = wizardTrialsFigure(view);
      if (trialsFigure) figures.push(trialsFigure);
      const phases = PHASE_NAMES_WITH_OTHER.map((p) => `${p} ${fmt(r.baseline.phasesMs[p], 'ms')} (${fmt(r.baseline.phasesPercent[p], '%')})`).join(', ');
      blocks.push({
        id: `script-wizard-baseline-${runSlug(run.id)}`,
        lead: '',
        body: [
          `The wizard (${code(run.id)}, preset ${r.preset}) measured its baseline ${r.repeat} times: ${fmt(r.baseline.samplesPerSec.median, 'samples/s')} (${intervalLevel(r.baseline.samplesPerSec)} CI ${ci(r.baseline.samplesPerSec)}), noise floor ${fmt(100 * r.baseline.noiseFloor, '%')}, step ${fmt(r.baseline.stepMs, 'ms')} on ${r.baseline.device}: ${phases}. The script's own loader: ${r.target.loader ? Object.entries(r.target.loader).map(([k, v]) => `${k}=${String(v)}`).join(', ') : 'no DataLoader seen'}.`,
          ...(trialsFigure ? ['', figureLink(trialsFigure.alt, trialsFigure.name)] : []),
        ].join('\n'),
      });
      for (const t of r.trials) blocks.push({ id: `script-attempt-${runSlug(run.id)}-${t.index}`, lead: '', body: wizardAttemptBody(++n, view, t) });
      const skipped = wizardSkippedLines(view);
      if (skipped.length) blocks.push({ id: `script-skipped-${runSlug(run.id)}`, lead: '', body: skipped.join('\n') });
    }
  }
  if (!blocks.length) blocks.push({ id: 'script-attempts', lead: '', body: 'One benchmark of your command and nothing measured against it: no attempt to report.' });
  return { blocks, figures, notes: [] };
}

export const attemptsSection = bothTargets(engineAttempts, scriptAttempts);
