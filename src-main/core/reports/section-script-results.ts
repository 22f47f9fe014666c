// The measured parts of a report about the user's own command: the benchmarks' phases and whole
// training runs, one attempt per later benchmark, search and wizard trial, and the decision
// written as the settings to put in the script.
import { PHASE_NAMES_WITH_OTHER } from '../../api/benchmark';
import type { Limit } from '../../api/optimise';
import type { ScriptBenchmarkResult } from '../../api/benchmark-result';
import { floorRows, SCRIPT_ENERGY_WINDOW } from '../../api/utilisation-words';
import type { BenchmarkChartInput } from '../../api/charts/benchmark-charts';
import { chartInputOf } from '../../api/charts/benchmark-charts';
import { batchSizeLabel, batchSizeOption } from '../../api/charts/batch-size-charts';
import { usableBytesOf } from '../../api/batch-size';
import { scriptLossOption, scriptRunCurves, scriptRunLabels, scriptThroughputOption } from '../../api/charts/run-charts';
import { commandText } from '../targets/script/script-benchmark';
import type { Interval } from '../stats/bootstrap';
import { ratioInterval, relativeHalfWidth } from '../stats/bootstrap';
import type { Decision } from '../stats/decision';
import { decide } from '../stats/decision';
import { comparisonFigures, phaseTable } from './benchmark-comparison';
import { ci, code, figureLink, fmt, MiB, speedupText, table } from './markdown';
import type { FigureSpec, ReportInput, SectionOutput } from './report-model';
import type { ScriptBatchRun, ScriptBenchmarkRun, ScriptOptimiseRun, ScriptTrainRun } from './report-runs';
import { overridesOf, overridesText, scriptBenchmarks } from './report-runs';
import { CONCLUSIONS } from './section-attempts';
import { scriptWizardView, trialConclusion, wizardAttemptBody, wizardDecisionLines, wizardSkippedLines, wizardTrialsFigure } from './section-wizard';
import { telemetryFigures } from './telemetry-figures';

function chartInputs(runs: readonly ScriptBenchmarkRun[]): { inputs: BenchmarkChartInput[]; labels: string[] } {
  const inputs = runs.map((r) => chartInputOf(r.result));
  return { inputs, labels: runs.map((r, i) => `${i + 1}. ${Object.keys(r.result.target.overrides).length ? overridesText(r.result.target.overrides) : 'as is'}`) };
}

/** A whole training run of the command: its numbers, its loss and throughput over steps, its telemetry. */
function trainPart(run: ScriptTrainRun): { body: string; figures: FigureSpec[] } {
  const r = run.result;
  const curves = scriptRunCurves(r.series);
  const labels = scriptRunLabels(curves);
  const figures: FigureSpec[] = [
    { name: `script-run-throughput-${run.id}.svg`, title: 'Samples/s and data wait over steps', alt: labels.throughput, runId: run.id, option: scriptThroughputOption(curves.rate, curves.dataWait) },
    ...(curves.loss.length ? [{ name: `script-run-loss-${run.id}.svg`, title: 'Training loss over steps', alt: labels.loss, runId: run.id, option: scriptLossOption(curves.loss) }] : []),
  ];
  const telemetry = telemetryFigures(run.id, run.telemetry);
  const rows = [
    ['steps (rank 0)', String(r.steps)],
    ['ended', r.ended === 'exit' ? `on its own, exit code ${String(r.exitCode)}` : r.ended === 'maxSteps' ? 'stopped by the probe at --max-steps' : `with an error${r.signal ? ` (${r.signal})` : ''}`],
    ['samples/s after the warm-up (sum over ranks)', r.samplesPerSec === undefined ? 'no step after the warm-up' : fmt(r.samplesPerSec)],
    ['step, steady state', r.stepTime.steadyStateMeanMs === null ? 'n/a' : fmt(r.stepTime.steadyStateMeanMs, 'ms')],
    ['data wait', r.dataWait ? `${fmt(r.dataWait.msPerStep, 'ms')} (${fmt(r.dataWait.percent, '%')})` : 'not measured'],
    ['last training loss', r.lastLoss ? `${fmt(r.lastLoss.value)} at step ${r.lastLoss.step}` : (r.lossNote ?? 'not read')],
    ['CUDA peak memory', r.peakMemory.cudaPeakBytes === null ? 'no CUDA' : fmt(r.peakMemory.cudaPeakBytes / MiB, 'MiB')],
    ['wall clock', fmt(r.seconds, 's')],
  ];
  return {
    body: [
      `### Training run ${code(run.id)} (overrides ${overridesText(r.overrides)})`,
      '',
      table(['Metric', 'Value'], rows),
      ...(r.lossNote && r.lastLoss ? ['', `Loss: ${r.lossNote}`] : []),
      '',
      ...figures.map((f) => figureLink(f.alt, f.name)),
      ...(telemetry.lines.length ? ['', ...telemetry.lines] : []),
    ].join('\n'),
    figures: [...figures, ...telemetry.figures],
  };
}

export function phasesPart(input: ReportInput): { body: string; figures: FigureSpec[] } {
  const trains = input.scripts.filter((r): r is ScriptTrainRun => r.kind === 'script-train').map(trainPart);
  const bench = benchmarkPhases(input);
  return { body: [bench.body, ...trains.map((t) => t.body)].filter(Boolean).join('\n\n'), figures: [...bench.figures, ...trains.flatMap((t) => t.figures)] };
}

function benchmarkPhases(input: ReportInput): { body: string; figures: FigureSpec[] } {
  const runs = scriptBenchmarks(input);
  if (!runs.length) {
    const wizard = input.scripts.some((r) => r.kind === 'script-optimise');
    return { body: wizard ? "No benchmark of your command among these runs: the wizard's baseline below is the reference." : '', figures: [] };
  }
  const { inputs, labels } = chartInputs(runs);
  const metrics = table(
    ['Metric', ...labels],
    [
      ['samples/s, median (sum over ranks)', ...runs.map((r) => fmt(r.result.samplesPerSec))],
      ['samples/s, 95% CI', ...runs.map((r) => ci(r.result.samplesPerSecCi))],
      ['batch (from the batch tensors)', ...runs.map((r) => (r.result.batchSize === null ? 'not seen' : String(r.result.batchSize)))],
      ['step, steady state', ...runs.map((r) => fmt(r.result.stepTime.steadyStateMeanMs, 'ms'))],
      ['data wait (slowest rank)', ...runs.map((r) => `${fmt(r.result.target.dataWait.msPerStep, 'ms')} (${fmt(r.result.target.dataWait.percent, '%')})`)],
      ['CUDA peak memory', ...runs.map((r) => (r.result.target.memory.cudaPeakBytes === null ? 'no CUDA' : fmt(r.result.target.memory.cudaPeakBytes / MiB, 'MiB')))],
      ['timing', ...runs.map((r) => r.result.target.ranks[0]?.timing ?? 'n/a')],
      // An estimate (the probe counts Linear and Conv layers): the method is in the text.
      ['model FLOPs utilisation, of torch.mm measured on the device (estimate)', ...runs.map((r) => scriptMfu(r.result))],
      ['compute floor per step (the step over it)', ...runs.map((r) => floorCell(r.result, (f) => f.compute))],
      ['host-to-device copy floor per step (the step over it)', ...runs.map((r) => floorCell(r.result, (f) => f.copy))],
      ['data floor per step', ...runs.map((r) => floorCell(r.result, (f) => f.data))],
      ['GPU energy per sample (mJ)', ...runs.map((r) => (r.result.energy ? fmt(1000 * r.result.energy.joulesPerSample) : r.result.energyMissing === undefined ? 'not recorded' : 'not measured'))],
    ],
  );
  const compared = runs.map((r, i) => ({ id: r.id, chart: inputs[i], phasesMs: r.result.phasesMs, phasesPercent: r.result.phasesPercent }));
  const phases = phaseTable(compared, labels, 'Phase (ms per step)');
  const figures: FigureSpec[] = comparisonFigures(compared, labels, {
    phases: 'script-phases.svg',
    phasesTitle: 'Time per step by phase, your command',
    throughput: 'script-throughput.svg',
    throughputTitle: 'Samples/s with 95% CI, your command',
  });
  const telemetry = runs.map((r) => telemetryFigures(r.id, r.telemetry));
  const findings = runs.flatMap((r, i) => r.result.findings.map((f) => `- ${labels[i]}: ${f.text}`));
  return {
    body: [
      `Baseline: ${code(runs[0].id)}${runs.length > 1 ? '; the others are attempts against it' : ''}.`,
      '',
      metrics,
      '',
      ...(runs[0].result.energyMissing ? [`GPU energy of ${code(runs[0].id)}: not measured: ${runs[0].result.energyMissing}.`, ''] : []),
      ...(runs.some((r) => r.result.energy) ? [`GPU energy: ${SCRIPT_ENERGY_WINDOW}.`, ''] : []),
      phases,
      '',
      runs[0].result.target.phaseNote,
      '',
      ...figures.map((f) => figureLink(f.alt, f.name)),
      ...(findings.length ? ['', 'Findings:', '', ...findings] : []),
      ...telemetry.flatMap((t) => (t.lines.length ? ['', ...t.lines] : [])),
    ].join('\n'),
    figures: [...figures, ...telemetry.flatMap((t) => t.figures)],
  };
}

interface ScriptBenchmarkAttempt {
  run: ScriptBenchmarkRun;
  speedup: Interval;
  decision: Decision;
  why: string;
}

/** A later benchmark of the same command against the first: ratio of medians over the launches. */
function benchmarkAttempts(input: ReportInput): ScriptBenchmarkAttempt[] {
  const [baseline, ...rest] = scriptBenchmarks(input);
  if (!baseline) return [];
  const sameCommand = (r: ScriptBenchmarkRun) => commandText(r.result.target.command) === commandText(baseline.result.target.command);
  return rest.filter(sameCommand).map((run) => {
    const speedup = ratioInterval(
      baseline.result.repetitions.map((x) => x.samplesPerSec),
      run.result.repetitions.map((x) => x.samplesPerSec),
    );
    return { run, speedup, ...decide(speedup, relativeHalfWidth(baseline.result.samplesPerSecCi)) };
  });
}

function benchmarkAttemptBody(n: number, a: ScriptBenchmarkAttempt, baseline: ScriptBenchmarkRun): string {
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
        ['samples/s, 95% CI', ci(b.samplesPerSecCi), ci(r.samplesPerSecCi)],
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

function searchBody(n: number, run: ScriptBatchRun): { body: string; figure: FigureSpec } {
  const r = run.result;
  const usable = usableBytesOf(r);
  const figure: FigureSpec = { name: `script-batch-size-${run.id}.svg`, title: 'Samples/s by batch size, your command', alt: batchSizeLabel(r.trials), runId: run.id, option: batchSizeOption(r.trials, usable) };
  const rows = r.trials.map((t) => [String(t.batchSize), t.outcome, t.samplesPerSec === null ? '-' : fmt(t.samplesPerSec), t.peakBytes === null ? '-' : fmt(t.peakBytes / MiB, 'MiB'), t.fits ? 'yes' : 'no', t.message ?? '']);
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

export function attemptsOutput(input: ReportInput): SectionOutput {
  const blocks: SectionOutput['blocks'] = [];
  const figures: FigureSpec[] = [];
  const baseline = scriptBenchmarks(input)[0];
  let n = 0;
  for (const a of benchmarkAttempts(input)) blocks.push({ id: `script-attempt-${a.run.id}`, lead: '', body: benchmarkAttemptBody(++n, a, baseline) });
  for (const run of input.scripts) {
    if (run.kind === 'script-batch-search') {
      const s = searchBody(++n, run);
      blocks.push({ id: `script-attempt-${run.id}`, lead: '', body: s.body });
      figures.push(s.figure);
    } else if (run.kind === 'script-optimise') {
      const r = run.result;
      const view = scriptWizardView(run);
      const trialsFigure = wizardTrialsFigure(view);
      if (trialsFigure) figures.push(trialsFigure);
      const phases = PHASE_NAMES_WITH_OTHER.map((p) => `${p} ${fmt(r.baseline.phasesMs[p], 'ms')} (${fmt(r.baseline.phasesPercent[p], '%')})`).join(', ');
      blocks.push({
        id: `script-wizard-baseline-${run.id}`,
        lead: '',
        body: [
          `The wizard (${code(run.id)}, preset ${r.preset}) measured its baseline ${r.repeat} times: ${fmt(r.baseline.samplesPerSec.median, 'samples/s')} (95% CI ${ci(r.baseline.samplesPerSec)}), noise floor ${fmt(100 * r.baseline.noiseFloor, '%')}, step ${fmt(r.baseline.stepMs, 'ms')} on ${r.baseline.device}: ${phases}. The script's own loader: ${r.target.loader ? Object.entries(r.target.loader).map(([k, v]) => `${k}=${String(v)}`).join(', ') : 'no DataLoader seen'}.`,
          ...(trialsFigure ? ['', figureLink(trialsFigure.alt, trialsFigure.name)] : []),
        ].join('\n'),
      });
      for (const t of r.trials) blocks.push({ id: `script-attempt-${run.id}-${t.index}`, lead: '', body: wizardAttemptBody(++n, view, t) });
      const skipped = wizardSkippedLines(view);
      if (skipped.length) blocks.push({ id: `script-skipped-${run.id}`, lead: '', body: skipped.join('\n') });
    }
  }
  if (!blocks.length) blocks.push({ id: 'script-attempts', lead: '', body: 'One benchmark of your command and nothing measured against it: no attempt to report.' });
  return { blocks, figures, notes: [] };
}

export function decisionBody(input: ReportInput): string {
  const lines: string[] = [];
  for (const run of input.scripts.filter((r): r is ScriptOptimiseRun => r.kind === 'script-optimise')) lines.push(...wizardDecisionLines(scriptWizardView(run)), '');
  const accepted = benchmarkAttempts(input).filter((a) => a.decision === 'accept').sort((x, y) => y.speedup.median - x.speedup.median)[0];
  if (accepted) lines.push(`Among the benchmarks, ${code(accepted.run.id)} (${overridesText(accepted.run.result.target.overrides)}) is the fastest beyond the noise: ${speedupText(accepted.speedup)}.`, '');
  for (const s of input.scripts.filter((r): r is ScriptBatchRun => r.kind === 'script-batch-search')) lines.push(`Batch size (${code(s.id)}): ${s.result.verdict}.`, '');
  const others = benchmarkAttempts(input).filter((a) => a !== accepted);
  for (const a of others) lines.push(`- ${code(a.run.id)} (${overridesText(a.run.result.target.overrides)}): ${CONCLUSIONS[a.decision]}`);
  for (const run of input.scripts.filter((r): r is ScriptOptimiseRun => r.kind === 'script-optimise')) {
    for (const t of run.result.trials) lines.push(`- ${t.change.label} (wizard trial ${t.index}): ${trialConclusion(t)}`);
  }
  return lines.join('\n').trim() || 'Nothing was measured against a baseline, so there is no decision yet: benchmark your command again with one override changed.';
}

const FLOOR_NAMES: Record<'compute' | 'copy' | 'data', string> = { compute: 'Compute floor', copy: 'Host-to-device copy floor', data: 'Data floor' };

/** The Physical limits section for scripts: each benchmark's floors beside its step, as the engine's are given. */
export function scriptLimitsBody(input: ReportInput): string {
  const measured = scriptBenchmarks(input).filter((r) => r.result.target.floors);
  const lines = measured.flatMap((r) => {
    const f = r.result.target.floors!;
    return [
      `Measured by the benchmark ${code(r.id)} (${Object.keys(r.result.target.overrides).length ? overridesText(r.result.target.overrides) : 'as is'}), per step and rank, from rates the probe measured after the measured steps:`,
      '',
      ...floorRows(f).map(({ name: key, limit: l }) => {
        const name = FLOOR_NAMES[key];
        return l.stepMs === null ? `- ${name}: ${l.derivation}.` : `- ${name}: ${fmt(l.stepMs, 'ms')} per step (${fmt(l.samplesPerSec, 'samples/s')}); the step is ${fmt(l.baselineOverFloor)}× that. ${l.derivation}.`;
      }),
      '',
      f.summary,
      '',
    ];
  });
  return [
    ...(lines.length ? lines : ['Your command has no model spec Trainbench can count bytes from, and no benchmark here measured its floors, so no compute or bandwidth floor is given for it.', '']),
    'The data-wait share above is the measured limit of loading: a step that waits for the DataLoader is bound by loading, whatever the GPU could do.',
  ].join('\n');
}

/** A floor as a cell: its milliseconds and how far the step is from it, or 'not measured'. */
function floorCell(r: ScriptBenchmarkResult, pick: (f: NonNullable<ScriptBenchmarkResult['target']['floors']>) => Limit): string {
  if (!r.target.floors) return 'not recorded';
  const l = pick(r.target.floors);
  return l.stepMs === null ? 'not measured' : `${fmt(l.stepMs, 'ms')} (${fmt(l.baselineOverFloor)}x)`;
}

function scriptMfu(r: ScriptBenchmarkResult): string {
  const u = r.utilisation;
  if (!u) return r.target.flops ? r.target.flops.method : 'not counted (recorded before issue 26)';
  const mfu = u.measured?.mfu;
  return mfu === null || mfu === undefined ? (u.problems[0] ?? u.measuredMissing ?? 'n/a') : `${fmt(100 * mfu, '%')} (${fmt(u.achievedGflops)} of ${fmt(u.measured!.gflops)} GFLOP/s)`;
}
