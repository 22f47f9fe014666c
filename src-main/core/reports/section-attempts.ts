// One section per attempt (objective, configuration, hypothesis, results, analysis, conclusion), the Decision and the Consequences.
import { THROUGHPUT_NOISE } from '../../api/batch-size';
import { batchSizeLabel, batchSizeOption } from '../../api/charts/batch-size-charts';
import type { BenchmarkAttempt, SearchAttempt } from './attempts';
import { engineWizardView, trialConclusion, wizardAttemptBody, wizardDecisionLines, wizardSkippedLines, wizardTrialsFigure } from './section-wizard';
import { changeText, ci, code, figureLink, fmt, MB, MiB, signedPercent, table } from './markdown';
import type { FigureSpec, ReportInput, SectionOutput } from './report-model';
import type { BenchmarkRun } from './report-runs';
import { optionsOf } from './report-runs';

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
  const what = settings.length ? settings.map((c) => `${c.setting} ${c.baseline} → ${c.attempt}`).join(', ') : 'no setting changed (a repeat of the baseline)';
  const s = a.speedup;
  const rows = [
    ['samples/s, median', fmt(b.samplesPerSecCi.median), fmt(r.samplesPerSecCi.median), `${signedPercent(s.median - 1)} (95% CI ${signedPercent(s.low - 1)} to ${signedPercent(s.high - 1)})`],
    ['samples/s, 95% CI', ci(b.samplesPerSecCi), ci(r.samplesPerSecCi), ''],
    ['step time, steady state (ms)', fmt(b.stepTime.steadyStateMeanMs), fmt(r.stepTime.steadyStateMeanMs), change(b.stepTime.steadyStateMeanMs, r.stepTime.steadyStateMeanMs)],
    ['step time, wall clock (ms)', fmt(b.stepTime.wallClockMeanMs), fmt(r.stepTime.wallClockMeanMs), change(b.stepTime.wallClockMeanMs, r.stepTime.wallClockMeanMs)],
    ['predicted epoch, steady state (s)', fmt(b.target.predictedEpochSeconds.fromSteadyState), fmt(r.target.predictedEpochSeconds.fromSteadyState), change(b.target.predictedEpochSeconds.fromSteadyState, r.target.predictedEpochSeconds.fromSteadyState)],
    ['training memory, measured (MB)', fmt(b.target.memory.measured.total / MB), fmt(r.target.memory.measured.total / MB), change(b.target.memory.measured.total, r.target.memory.measured.total)],
  ];
  const analysis = [
    `The speedup's interval is a percentile bootstrap over the ${b.repetitions.length} + ${r.repetitions.length} repetitions; the baseline's noise floor (half its CI's width relative to its median) is ${fmt(100 * a.noiseFloor, '%')}. ${a.why[0].toUpperCase()}${a.why.slice(1)}.`,
  ];
  const p = a.largestPhaseChange;
  if (p) analysis.push(`The phase that moved most is \`${p.phase}\`: ${fmt(p.baseline)} → ${fmt(p.attempt)} ${p.unit} (${change(p.baseline, p.attempt)}).`);
  if (settings.length > 1) analysis.push(`${settings.length} settings differ from the baseline at once, so these runs cannot say which of them made the difference.`);
  if (protocol.length) analysis.push(`It was measured differently from the baseline (${protocol.map((c) => `${c.setting} ${c.baseline} → ${c.attempt}`).join(', ')}); the steady-state figures compare, the wall-clock ones include a different share of warm-up.`);
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
    a.changes.length ? table(['Setting', 'Baseline', 'Attempt'], a.changes.map((c) => [c.setting, c.baseline, c.attempt])) : 'Identical to the baseline.',
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
function benchmarkOfBatch(input: ReportInput, batch: number | null): { n: number; attempt: BenchmarkAttempt } | null {
  if (batch === null) return null;
  const i = input.attempts.findIndex((a) => a.kind === 'benchmark' && a.run.result.batchSize === batch && a.run.result.target.accumulation === 1);
  return i < 0 ? null : { n: i + 1, attempt: input.attempts[i] as BenchmarkAttempt };
}

function searchAttemptBody(n: number, a: SearchAttempt, input: ReportInput): { body: string; figure: FigureSpec } {
  const r = a.run.result;
  const figure: FigureSpec = { name: `batch-size-${a.run.id}.svg`, title: 'Throughput and memory by batch size', alt: batchSizeLabel(r.trials), runId: a.run.id, option: batchSizeOption(r.trials, r.target.usableBytes) };
  // On the CPU the engine's accounting repeats its prediction: what was measured there is the process as the OS counted it.
  const processPeak = (t: (typeof r.trials)[number]) => (t.target.kind === 'engine' ? t.target.processPeakRssBytes : null);
  const cpu = r.trials.some((t) => processPeak(t) !== null);
  const measured = (t: (typeof r.trials)[number]) => (cpu ? processPeak(t) : t.peakBytes);
  const trials = table(
    ['Batch', 'Outcome', 'samples/s', 'Predicted MiB', cpu ? 'Process peak MiB (as the OS counts it)' : 'Measured MiB', 'Fits the headroom'],
    r.trials.map((t) => [
      t.accumulation > 1 ? `${fmt(t.batchSize)} × ${t.accumulation}` : fmt(t.batchSize),
      t.outcome,
      t.samplesPerSec === null ? '-' : fmt(t.samplesPerSec),
      t.target.kind === 'engine' ? fmt(t.target.predicted.total / MiB) : '-',
      measured(t) === null ? '-' : fmt((measured(t) as number) / MiB),
      t.fits ? 'yes' : 'no',
    ]),
  );
  const steps = (a.run.record.config as { stepsPerTrial?: number }).stepsPerTrial;
  const chosen = r.trials.find((t) => t.batchSize === r.recommended && t.accumulation === 1 && t.outcome === 'ok');
  const below = [...new Set(r.trials.filter((t) => t.batchSize < r.target.seedBatch).map((t) => t.batchSize))].sort((x, y) => x - y).map((b) => fmt(b));
  const results: string[] = [trials, '', figureLink(figure.alt, figure.name), ''];
  let conclusion: string;
  if (a.baseline && chosen?.samplesPerSec != null) {
    const b = a.baseline.result;
    results.push(
      table(
        ['Metric', `Baseline ${code(a.baseline.id)}`, `Recommended batch ${fmt(chosen.batchSize)}`, 'Change'],
        [
          ['batch size', fmt(b.batchSize * b.target.accumulation), fmt(chosen.batchSize), change(b.batchSize * b.target.accumulation, chosen.batchSize)],
          ['samples/s', `${fmt(b.samplesPerSecCi.median)} (95% CI ${ci(b.samplesPerSecCi)})`, `${fmt(chosen.samplesPerSec)} (one trial, no CI)`, change(b.samplesPerSecCi.median, chosen.samplesPerSec)],
          ['training memory (MiB)', fmt(b.target.memory.measured.total / MiB), chosen.peakBytes === null ? '-' : fmt(chosen.peakBytes / MiB), chosen.peakBytes === null ? '' : change(b.target.memory.measured.total, chosen.peakBytes)],
        ],
      ),
      '',
    );
    const measured = benchmarkOfBatch(input, chosen.batchSize);
    const next = measured
      ? `attempt ${measured.n} benchmarks batch ${fmt(chosen.batchSize)} with repetitions.`
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
    `**Analysis**: the search's verdict (from its run file): ${r.verdict}.`,
    '',
    `**Conclusion**: ${conclusion}`,
  ].join('\n');
  return { body, figure };
}

export function attemptsSection(input: ReportInput): SectionOutput {
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
    const lines = figure ? [`The wizard's trials (${code(run.id)}): each configuration's samples/s over its own repetitions.`, '', figureLink(figure.alt, figure.name), ''] : [];
    blocks.push({ id: `trials-${run.id}`, lead: '', body: [...lines, ...skipped].join('\n') });
  }
  for (const [i, a] of input.attempts.entries()) {
    if (a.kind === 'benchmark') blocks.push({ id: `attempt-${a.run.id}`, lead: '', body: benchmarkAttemptBody(i + 1, a) });
    else if (a.kind === 'optimise-trial') blocks.push({ id: `attempt-${a.run.id}-${a.trial.index}`, lead: '', body: wizardAttemptBody(i + 1, engineWizardView(a.run), a.trial) });
    else {
      const { body, figure } = searchAttemptBody(i + 1, a, input);
      blocks.push({ id: `attempt-${a.run.id}`, lead: '', body });
      figures.push(figure);
    }
  }
  return { blocks, figures, notes: [] };
}

function configuration(run: BenchmarkRun): string {
  const r = run.result;
  return `device ${r.device}, ${r.target.precision}, ${r.target.optimizer}, batch ${fmt(r.batchSize)} × accumulation ${r.target.accumulation}`;
}

export function decisionSection(input: ReportInput): SectionOutput {
  const lines: string[] = [];
  const benchmarkAttempts = input.attempts.filter((a): a is BenchmarkAttempt => a.kind === 'benchmark');
  const accepted = benchmarkAttempts.filter((a) => a.decision === 'accept');
  input.attempts.forEach((a, i) => {
    if (a.kind === 'benchmark') lines.push(`- Attempt ${i + 1} (${code(a.run.id)}): ${CONCLUSIONS[a.decision]}`);
    else if (a.kind === 'optimise-trial') lines.push(`- Attempt ${i + 1} (${a.trial.change.label}, wizard trial ${a.trial.index}): ${trialConclusion(a.trial)}`);
    else {
      const measured = benchmarkOfBatch(input, a.run.result.recommended);
      const what =
        a.run.result.recommended === null
          ? 'no batch fits'
          : `batch ${fmt(a.run.result.recommended)} proposed by the batch-size search, ${measured ? `measured with repetitions in attempt ${measured.n}` : 'not yet measured with repetitions'}`;
      lines.push(`- Attempt ${i + 1} (${code(a.run.id)}): ${what}.`);
    }
  });
  if (lines.length) lines.push('');
  for (const run of input.optimisations) lines.push(...wizardDecisionLines(engineWizardView(run)), '');
  if (!input.baseline) {
    if (!input.optimisations.length) lines.push('There is no baseline benchmark among these runs, so no configuration is chosen from measurements with repetitions.');
  } else if (accepted.length === 0) {
    lines.push(`Keep the baseline configuration (${configuration(input.baseline)}): ${benchmarkAttempts.length ? 'no benchmarked change beat the run-to-run noise' : 'no change was benchmarked against it'}.`);
  } else {
    const best = accepted.reduce((x, y) => (y.speedup.median > x.speedup.median ? y : x));
    lines.push(`Use the configuration of ${code(best.run.id)} (${configuration(best.run)}): ${fmt(best.run.result.samplesPerSecCi.median, 'samples/s')}, ${signedPercent(best.speedup.median - 1)} over the baseline (95% CI ${signedPercent(best.speedup.low - 1)} to ${signedPercent(best.speedup.high - 1)}).`);
    if (best.recipeChanges.length) lines.push('', `It changes the training recipe (${best.recipeChanges.join(', ')}): check what it trains to before adopting it.`);
    if (accepted.length > 1) lines.push('', 'Accepted attempts were each measured against the baseline alone, not combined; their effects may not add up.');
  }
  return { blocks: [{ id: 'decision', lead: '', body: lines.join('\n') }], figures: [], notes: [] };
}

export function consequencesSection(input: ReportInput): SectionOutput {
  const lines: string[] = [];
  const b = input.baseline;
  if (b) {
    const r = b.result;
    lines.push(`- An epoch of ${fmt(r.target.stepsPerEpoch)} steps takes about ${fmt(r.target.predictedEpochSeconds.fromWallClock, 's')} at the baseline's wall-clock step time (${fmt(r.target.predictedEpochSeconds.fromSteadyState, 's')} at its steady state).`);
    const chosen = input.attempts.filter((a): a is BenchmarkAttempt => a.kind === 'benchmark' && a.decision === 'accept').sort((x, y) => y.speedup.median - x.speedup.median)[0];
    if (chosen) {
      const c = chosen.run.result;
      lines.push(`- With the configuration of ${code(chosen.run.id)}, an epoch of ${fmt(c.target.stepsPerEpoch)} steps takes about ${fmt(c.target.predictedEpochSeconds.fromWallClock, 's')} (${fmt(c.target.predictedEpochSeconds.fromSteadyState, 's')} at its steady state), and training uses ${fmt(c.target.memory.measured.total / MiB, 'MiB')} instead of ${fmt(r.target.memory.measured.total / MiB, 'MiB')}.`);
    }
    if (r.target.memory.deviceTotalBytes) lines.push(`- Training uses ${fmt(r.target.memory.measured.total / MiB, 'MiB')} of the device's ${fmt(r.target.memory.deviceTotalBytes / MiB, 'MiB')} (${fmt((100 * r.target.memory.measured.total) / r.target.memory.deviceTotalBytes, '%')}).`);
  }
  for (const run of input.optimisations) {
    const f = run.result.final;
    lines.push(`- With the wizard's configuration (${code(run.id)}): ${fmt(f.samplesPerSec.median, 'samples/s')} (95% CI ${fmt(f.samplesPerSec.low)} to ${fmt(f.samplesPerSec.high)}), ${signedPercent(f.speedup.median - 1)} against its baseline.`);
  }
  const cpuOnly = input.runs.every((run) => !String(optionsOf(run).device ?? 'cpu').startsWith('cuda'));
  const caveats: string[] = [];
  if (cpuOnly) caveats.push('Every run used the CPU: these numbers say nothing about a GPU.');
  for (const bench of input.benchmarks) if (bench.result.repeat < 3) caveats.push(`${code(bench.id)} has ${bench.result.repeat} repetition${bench.result.repeat === 1 ? '' : 's'}; its interval needs 3 or more to mean much.`);
  for (const run of input.runs) {
    if (run.kind !== 'batch-search' && run.telemetry.length === 0) caveats.push(`${code(run.id)} recorded no telemetry, so its GPU and CPU load are unknown.`);
  }
  if (new Set(input.runs.map((r) => r.record.environment?.hostname)).size > 1) caveats.push('The runs come from more than one machine.');
  if (caveats.length) lines.push('', 'What these runs do not show:', '', ...caveats.map((c) => `- ${c}`));
  if (!lines.length) lines.push('No consequences can be drawn: there is no baseline benchmark or optimisation among these runs.');
  return { blocks: [{ id: 'consequences', lead: '', body: lines.join('\n').replace(/^\n/, '') }], figures: [], notes: [] };
}
