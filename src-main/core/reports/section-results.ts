// Baseline metrics and phase breakdown, and the physical limits the runs support.
import { PHASE_NAMES } from '../../api/benchmark';
import { benchmarkLabels, chartInputOf } from '../../api/charts/benchmark-charts';
import { loaderBenchLabel, loaderBenchOption } from '../../api/charts/loader-charts';
import { lossCurveOption, memoryKindsOption, phaseBarsOption, phaseTotalMs } from '../../api/charts/run-charts';
import { comparisonFigures, phaseTable } from './benchmark-comparison';
import { code, figureLink, fmt, MB, MiB, table } from './markdown';
import type { FigureSpec, ReportInput, SectionOutput } from './report-model';
import type { BenchmarkRun, LoaderRun, TrainRun } from './report-runs';
import { optimiseBaselinePart, optimiseLimitLines } from './section-optimise';
import { telemetryFigures } from './telemetry-figures';

const pct = (x: number | null) => (x === null ? 'not measured' : fmt(x, '%'));

function benchmarkMetrics(runs: readonly BenchmarkRun[], labels: readonly string[]): string {
  const row = (name: string, read: (r: BenchmarkRun) => string) => [name, ...runs.map(read)];
  return table(
    ['Metric', ...labels.map((l, i) => `${l} (${code(runs[i].id)})`)],
    [
      row('samples/s, median of repetitions', (r) => fmt(r.result.samplesPerSecCi.median)),
      row('samples/s, 95% CI', (r) => `${fmt(r.result.samplesPerSecCi.low)} to ${fmt(r.result.samplesPerSecCi.high)}`),
      row('step time, steady state (ms)', (r) => fmt(r.result.stepTime.steadyStateMeanMs)),
      row('step time, wall-clock mean incl. warm-up (ms)', (r) => fmt(r.result.stepTime.wallClockMeanMs)),
      row('steps per epoch', (r) => fmt(r.result.target.stepsPerEpoch)),
      row('predicted epoch, from steady state (s)', (r) => fmt(r.result.target.predictedEpochSeconds.fromSteadyState)),
      row('predicted epoch, from wall clock (s)', (r) => fmt(r.result.target.predictedEpochSeconds.fromWallClock)),
      row('training memory, measured (MB)', (r) => fmt(r.result.target.memory.measured.total / MB)),
      row('training memory, predicted (MB)', (r) => fmt(r.result.target.memory.predicted.total / MB)),
      // The OS's view beside the accounting: runs recorded before it say so.
      row('engine process peak resident, most of any repetition (MB)', (r) => {
        const peaks = r.result.repetitions.flatMap((x) => (x.target.processMemory ? [x.target.processMemory.peakRssBytes] : []));
        return peaks.length ? fmt(Math.max(...peaks) / MB) : 'not recorded';
      }),
      row('model FLOPs utilisation, of the peak measured on the device', (r) => {
        const u = r.result.utilisation;
        if (!u) return 'not recorded';
        return u.measured?.mfu !== null && u.measured?.mfu !== undefined ? fmt(100 * u.measured.mfu, '%') : u.problems.length ? 'not shown: a measurement error (see the run)' : 'no measured peak';
      }),
      row('model FLOPs utilisation, of the datasheet peak', (r) => {
        const d = r.result.utilisation?.datasheet;
        return d ? (d.mfu === null ? 'not shown: a measurement error' : `${fmt(100 * d.mfu, '%')} of ${d.device} ${d.precision}`) : 'no datasheet peak';
      }),
      row('GPU energy per sample (mJ)', (r) => (r.result.energy ? fmt(1000 * r.result.energy.joulesPerSample) : 'not measured')),
      row('GPU utilisation, mean', (r) => pct(r.result.telemetry.gpuUtilizationMean)),
      row('host CPU load, mean', (r) => pct(r.result.telemetry.cpuMean)),
    ],
  );
}

function benchmarkPart(input: ReportInput): { lines: string[]; figures: FigureSpec[] } {
  const runs = input.benchmarks;
  if (!runs.length) {
    const why = input.optimisations.length ? 'the optimisation wizard measured its own baseline, below' : 'there is no phase breakdown with repetitions';
    return { lines: [`No training benchmark among these runs: ${why}.`], figures: [] };
  }
  const labels = benchmarkLabels(runs.map((r) => chartInputOf(r.result)));
  const compared = runs.map((r) => ({ id: r.id, chart: chartInputOf(r.result), phasesMs: r.result.phasesMs, phasesPercent: r.result.phasesPercent }));
  const figures: FigureSpec[] = comparisonFigures(compared, labels, { phases: 'phase-breakdown.svg', phasesTitle: 'Time per step by phase', throughput: 'throughput.svg', throughputTitle: 'Samples/s with 95% CI' });
  const base = runs[0];
  const memory = { name: `memory-${base.id}.svg`, title: 'Memory by kind', alt: `Memory by kind, predicted and measured, run ${base.id}: ${fmt(base.result.target.memory.measured.total / MB, 'MB')} measured in all`, runId: base.id, option: memoryKindsOption(base.result.target.memory) };
  const telemetry = telemetryFigures(base.id, base.telemetry);
  const lines = [
    `Steady state: the mean over the measured steps after the warm-up; wall clock: the mean over every step, warm-up included. Each benchmark ran ${runs.map((r) => `${r.result.repeat} repetitions of ${r.result.warmupSteps} + ${r.result.steps} steps`).join('; ')} (each repetition a fresh trainer).`,
    '',
    benchmarkMetrics(runs, labels),
    '',
    'Where the steady-state step goes, per phase (`other` is the step minus the named phases):',
    '',
    phaseTable(
      compared,
      labels.map((l) => `${l}: ms per step (share)`),
    ),
    '',
    ...runs.filter((r) => r.result.namedPhasesExceedStepMs !== null).map((r) => `In ${code(r.id)} the named phases add up to ${fmt(r.result.namedPhasesExceedStepMs, 'ms')} more than the step (their timers overlap), so \`other\` is 0.\n`),
    figureLink(figures[0].alt, figures[0].name),
    '',
    figureLink(figures[1].alt, figures[1].name),
    '',
    figureLink(memory.alt, memory.name),
    '',
    ...telemetry.lines.flatMap((l) => [l, '']),
    ...runs.flatMap((r) => (r.result.findings.length ? [`Findings of ${code(r.id)} (from its run file):`, '', ...r.result.findings.map((f) => `- ${f.text}`), ''] : [])),
  ];
  return { lines, figures: [...figures, memory, ...telemetry.figures] };
}

function trainPart(run: TrainRun): { lines: string[]; figures: FigureSpec[] } {
  const r = run.result;
  const figures: FigureSpec[] = [];
  const lines = [
    `#### Training run ${code(run.id)}`,
    '',
    table(
      ['Metric', 'Value'],
      [
        ['steps, samples', `${fmt(r.steps)}, ${fmt(r.samples)}`],
        ['seconds', fmt(r.seconds)],
        ['samples/s, wall clock incl. warm-up and evaluation', fmt(r.samplesPerSec)],
        ['step time, steady state (ms)', r.stepTime.steadyStateMeanMs === null ? 'not measured (too few steps)' : fmt(r.stepTime.steadyStateMeanMs)],
        ['step time, wall-clock mean (ms)', fmt(r.stepTime.wallClockMeanMs)],
        ['test accuracy', r.test ? (r.test.accuracy === null ? 'not a classification task' : fmt(100 * r.test.accuracy, '%')) : 'no test set'],
        ['test loss', r.test ? fmt(r.test.loss) : 'no test set'],
        ['training memory, measured (MB)', fmt(r.memory.measured.total / MB)],
        ['engine process peak resident (MB)', r.processMemory ? `${fmt(r.processMemory.peakRssBytes / MB)}${r.processMemory.fileRssBytes === null ? '' : `, ${fmt(r.processMemory.fileRssBytes / MB)} of it the mapped dataset and code`}` : 'not recorded'],
      ],
    ),
    '',
  ];
  const total = phaseTotalMs(r.phasesMs);
  if (total > 0) {
    figures.push({ name: `phases-${run.id}.svg`, title: 'Time per step by phase', alt: `Time per step by phase, run ${run.id}: ${PHASE_NAMES.map((p) => `${p} ${fmt(r.phasesMs[p], 'ms')}`).join(', ')}`, runId: run.id, option: phaseBarsOption(r.phasesMs), height: 260 });
    lines.push(figureLink(figures[0].alt, figures[0].name), '');
  } else {
    lines.push(`Run ${code(run.id)} recorded no phase times.`, '');
  }
  if (run.steps.length >= 2) {
    const last = run.steps[run.steps.length - 1];
    const loss = { name: `loss-${run.id}.svg`, title: 'Training loss and accuracy', alt: `Training loss and accuracy over ${fmt(last.globalStep)} steps of run ${run.id}: last loss ${fmt(last.loss)}`, runId: run.id, option: lossCurveOption(run.steps) };
    figures.push(loss);
    lines.push(figureLink(loss.alt, loss.name), '');
  } else {
    lines.push(`The loss curve is left out: run ${code(run.id)} recorded ${run.steps.length} step event${run.steps.length === 1 ? '' : 's'} (two are needed for a curve).`, '');
  }
  const telemetry = telemetryFigures(run.id, run.telemetry);
  lines.push(...telemetry.lines.flatMap((l) => [l, '']));
  return { lines, figures: [...figures, ...telemetry.figures] };
}

function loaderPart(run: LoaderRun): { lines: string[]; figures: FigureSpec[] } {
  const r = run.result;
  const figure: FigureSpec = { name: `loader-${run.id}.svg`, title: 'Loader throughput', alt: loaderBenchLabel(r), runId: run.id, option: loaderBenchOption(r), height: 300 };
  const rows = [...r.cached.map((x) => ['cached', x] as const), ...(r.uncached ?? []).map((x) => ['source in place', x] as const)];
  const telemetry = telemetryFigures(run.id, run.telemetry);
  const lines = [
    `#### Data-loader benchmark ${code(run.id)}: ${r.dataset}, batch ${fmt(r.batchSize)}`,
    '',
    'The loader alone, no model: how fast batches can be gathered at each setting.',
    '',
    table(
      ['Read from', 'Workers', 'Prefetch', 'samples/s', 'MB/s', 'Batch latency p50 (ms)', 'p95 (ms)', 'Consumer waited', 'Worker efficiency'],
      rows.map(([from, x]) => [from, String(x.workers), String(x.prefetch), fmt(x.samplesPerSec), fmt(x.mbPerSec), fmt(x.latencyP50Ms), fmt(x.latencyP95Ms), fmt(100 * x.waitedFraction, '%'), fmt(100 * x.workerEfficiency, '%')]),
    ),
    '',
    `Fastest cached setting (from the run file): ${r.best.workers} worker${r.best.workers === 1 ? '' : 's'}, prefetch ${r.best.prefetch}.${r.uncached ? '' : ` The source files were not read in place: ${r.uncachedReason ?? 'no reason recorded'}.`}`,
    '',
    figureLink(figure.alt, figure.name),
    '',
    ...telemetry.lines.flatMap((l) => [l, '']),
  ];
  return { lines, figures: [figure, ...telemetry.figures] };
}

export function phasesSection(input: ReportInput): SectionOutput {
  const bench = benchmarkPart(input);
  const blocks = [{ id: 'phases', lead: '', body: bench.lines.join('\n') }];
  const figures = [...bench.figures];
  for (const run of input.optimisations) {
    const part = optimiseBaselinePart(run);
    blocks.push({ id: `optimise-${run.id}`, lead: '', body: part.lines.join('\n') });
    figures.push(...part.figures);
  }
  for (const run of input.loaders) {
    const part = loaderPart(run);
    blocks.push({ id: `loader-${run.id}`, lead: '', body: part.lines.join('\n') });
    figures.push(...part.figures);
  }
  for (const run of input.trains) {
    const part = trainPart(run);
    blocks.push({ id: `train-${run.id}`, lead: '', body: part.lines.join('\n') });
    figures.push(...part.figures);
  }
  return { blocks, figures, notes: [] };
}

/** The step's compute phases, a floor while the model, batch and device stay as they are. */
function computeFloor(run: BenchmarkRun): string {
  const r = run.result;
  const computeMs = r.phasesMs.forward + r.phasesMs.loss + r.phasesMs.backward + r.phasesMs.optimizer;
  const perStep = r.batchSize * r.target.accumulation;
  const share = computeMs / r.stepTime.steadyStateMeanMs;
  return [
    `- ${code(run.id)}: forward + loss + backward + optimizer take ${fmt(computeMs, 'ms')} of the ${fmt(r.stepTime.steadyStateMeanMs, 'ms')} step (${fmt(100 * share, '%')}).`,
    `  With data loading, copies and other overhead hidden completely, this configuration would reach at most ${fmt((1000 * perStep) / computeMs, 'samples/s')} (${fmt((r.target.stepsPerEpoch * computeMs) / 1000, 's')} per epoch of ${fmt(r.target.stepsPerEpoch)} steps);`,
    `  at the mean steady-state step it reaches ${fmt((1000 * perStep) / r.stepTime.steadyStateMeanMs, 'samples/s')}, so at most ${fmt(100 * (1 / share - 1), '%')} is left to gain outside the compute phases.`,
  ].join('\n');
}

export function limitsSection(input: ReportInput): SectionOutput {
  const lines: string[] = [];
  if (input.benchmarks.length) {
    lines.push('From the measured phases (an upper bound for pipeline work, not a hardware limit):', '', ...input.benchmarks.map(computeFloor), '');
  }
  for (const s of input.searches) {
    const r = s.result;
    lines.push(
      `Memory (${code(s.id)}): ${r.target.capacitySource === 'memory-limit' ? 'the memory limit set for the CPU run' : 'the device memory'} is ${fmt(r.capacityBytes / MiB, 'MiB')}; keeping ${fmt(100 * r.headroom, '%')} free leaves ${fmt(r.target.usableBytes / MiB, 'MiB')}, and the largest batch measured to fit is ${r.largestFitting === null ? 'none' : fmt(r.largestFitting)}.`,
      '',
    );
  }
  for (const run of input.optimisations) lines.push(...optimiseLimitLines(run), '');
  if (!input.optimisations.length) {
    lines.push(
      'The run files hold no measured matrix-multiply rate and no read or host-to-device bandwidth, so no compute floor from FLOPs and no data floor from bytes per sample can be stated here; the optimisation wizard measures both.',
    );
  }
  return { blocks: [{ id: 'limits', lead: '', body: lines.join('\n') }], figures: [], notes: [] };
}
