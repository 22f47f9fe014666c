// Baseline metrics and phase breakdown, and the physical limits the runs support, for both targets.
import { intervalLevels } from '../../api/order-interval';
import { floorWords, scalingWords } from '../../api/collectives';
import type { ScriptBenchmarkResult } from '../../api/benchmark-result';
import type { BenchmarkChartInput } from '../../api/charts/benchmark-charts';
import { benchmarkLabels, chartInputOf } from '../../api/charts/benchmark-charts';
import { loaderBenchLabel, loaderBenchOption } from '../../api/charts/loader-charts';
import { memoryKindsOption } from '../../api/charts/run-charts';
import type { Limit } from '../../api/optimise';
import { floorRows, SCRIPT_ENERGY_WINDOW } from '../../api/utilisation-words';
import { comparisonFigures, phaseTable } from './benchmark-comparison';
import { ci, code, figureLink, fmt, MB, MiB, table } from './markdown';
import type { FigureSpec, ReportInput, SectionOutput } from './report-model';
import { block, bothTargets } from './report-model';
import type { BenchmarkRun, LoaderRun, ScriptBenchmarkRun, ScriptTrainReportRun } from './report-runs';
import { overridesText, scriptBenchmarks } from './report-runs';
import { optimiseBaselinePart, optimiseLimitLines } from './section-optimise';
import { trainRunPart } from './section-train';
import { telemetryFigures } from './telemetry-figures';
import { runSlug } from './run-slug';
import { printable } from '../../api/shell-word';

const pct = (x: number | null) => (x === null ? 'not measured' : fmt(x, '%'));

/** How the benchmarks measured: once when they all measured alike (a report once said the same protocol twice), else each by its label. */
function protocolText(runs: readonly BenchmarkRun[], labels: readonly string[]): string {
  const each = runs.map((r) => `${r.result.repeat} repetition${r.result.repeat === 1 ? '' : 's'} of ${r.result.warmupSteps} + ${r.result.steps} steps`);
  if (new Set(each).size === 1) return `${runs.length === 1 ? 'The benchmark' : 'Each benchmark'} ran ${each[0]}`;
  return `The benchmarks ran ${each.map((e, i) => `${e} (${labels[i]})`).join('; ')}`;
}

function benchmarkMetrics(runs: readonly BenchmarkRun[], labels: readonly string[]): string {
  const row = (name: string, read: (r: BenchmarkRun) => string) => [name, ...runs.map(read)];
  return table(
    ['Metric', ...labels.map((l, i) => `${l} (${code(runs[i].id)})`)],
    [
      row('samples/s, median of repetitions', (r) => fmt(r.result.samplesPerSecCi.median)),
      row(`samples/s, ${intervalLevels(runs.map((r) => r.result.samplesPerSecCi))} CI`, (r) => `${fmt(r.result.samplesPerSecCi.low)} to ${fmt(r.result.samplesPerSecCi.high)}`),
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
  const figures: FigureSpec[] = comparisonFigures(compared, labels, { phases: 'phase-breakdown.svg', phasesTitle: 'Time per step by phase', throughput: 'throughput.svg', throughputTitle: `Samples/s with ${intervalLevels(runs.map((r) => r.result.samplesPerSecCi))} CI` });
  const base = runs[0];
  const memory = { name: `memory-${runSlug(base.id)}.svg`, title: 'Memory by kind', alt: `Memory by kind, predicted and measured, run ${base.id}: ${fmt(base.result.target.memory.measured.total / MB, 'MB')} measured in all`, runId: base.id, option: memoryKindsOption(base.result.target.memory) };
  const telemetry = telemetryFigures(base.id, base.telemetry);
  const lines = [
    `Steady state: the mean over the measured steps after the warm-up; wall clock: the mean over every step, warm-up included. ${protocolText(runs, labels)} (each repetition a fresh trainer).`,
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

function loaderPart(run: LoaderRun): { lines: string[]; figures: FigureSpec[] } {
  const r = run.result;
  const figure: FigureSpec = { name: `loader-${runSlug(run.id)}.svg`, title: 'Loader throughput', alt: loaderBenchLabel(r), runId: run.id, option: loaderBenchOption(r), height: 300 };
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

function enginePhases(input: ReportInput): SectionOutput {
  const bench = benchmarkPart(input);
  const blocks = [{ id: 'phases', lead: '', body: bench.lines.join('\n') }];
  const figures = [...bench.figures];
  for (const run of input.optimisations) {
    const part = optimiseBaselinePart(run);
    blocks.push({ id: `optimise-${runSlug(run.id)}`, lead: '', body: part.lines.join('\n') });
    figures.push(...part.figures);
  }
  for (const run of input.loaders) {
    const part = loaderPart(run);
    blocks.push({ id: `loader-${runSlug(run.id)}`, lead: '', body: part.lines.join('\n') });
    figures.push(...part.figures);
  }
  for (const run of input.trains) {
    const part = trainRunPart(run);
    blocks.push({ id: `train-${runSlug(run.id)}`, lead: '', body: part.body });
    figures.push(...part.figures);
  }
  return { blocks, figures, notes: [] };
}

/**
 * The step's compute phases, a floor while the model, batch and device stay as they are. The bound is the
 * headline rate (the median of the repetitions, as every table shows it) over the compute phases' share of the
 * step: a bound from the mean step alone came out below the median the same report showed beside it.
 */
function computeFloor(run: BenchmarkRun): string {
  const r = run.result;
  const computeMs = r.phasesMs.forward + r.phasesMs.loss + r.phasesMs.backward + r.phasesMs.optimizer;
  const perStep = r.batchSize * r.target.accumulation;
  const share = computeMs / r.stepTime.steadyStateMeanMs;
  const rate = r.samplesPerSecCi.median;
  const atMost = rate / share;
  return [
    `- ${code(run.id)}: forward + loss + backward + optimizer take ${fmt(computeMs, 'ms')} of the ${fmt(r.stepTime.steadyStateMeanMs, 'ms')} mean steady-state step (${fmt(100 * share, '%')}).`,
    `  It reaches ${fmt(rate, 'samples/s')} (the median of its repetitions); with data loading, copies and other overhead hidden completely it would reach at most ${fmt(atMost, 'samples/s')} (that rate over the compute phases' ${fmt(100 * share, '%')} of the step; ${fmt((r.target.stepsPerEpoch * perStep) / atMost, 's')} per epoch of ${fmt(r.target.stepsPerEpoch)} steps),`,
    `  so at most ${fmt(100 * (1 / share - 1), '%')} is left to gain outside the compute phases.`,
  ].join('\n');
}

function engineLimits(input: ReportInput): SectionOutput {
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

// The benchmarks of the user's own command: their metrics, phases and floors; and its training runs.

/** Labels numbered on from the report's engine benchmarks (`first`): a mixed report has one run "1.", not two. */
function scriptChartInputs(runs: readonly ScriptBenchmarkRun[], first: number): { inputs: BenchmarkChartInput[]; labels: string[] } {
  const inputs = runs.map((r) => chartInputOf(r.result));
  return { inputs, labels: runs.map((r, i) => `${first + i}. ${Object.keys(r.result.target.overrides).length ? overridesText(r.result.target.overrides) : 'as is'}`) };
}

function scriptPhases(input: ReportInput): { body: string; figures: FigureSpec[] } {
  const trains = input.scripts.filter((r): r is ScriptTrainReportRun => r.kind === 'script-train').map(trainRunPart);
  const bench = benchmarkPhases(input);
  return { body: [bench.body, ...trains.map((t) => t.body)].filter(Boolean).join('\n\n'), figures: [...bench.figures, ...trains.flatMap((t) => t.figures)] };
}

const LATE_IN = { data: 'waiting for data', compute: 'compute', host: 'host work' } as const;

/** A job of several ranks (issue 40): who the others wait for at the collectives, and what communication costs. */
function collectiveRows(runs: ReturnType<typeof scriptBenchmarks>): string[][] {
  if (!runs.some((r) => r.result.target.collectives)) return [];
  const each = (cell: (c: NonNullable<ScriptBenchmarkResult['target']['collectives']>) => string) => runs.map((r) => (r.result.target.collectives ? cell(r.result.target.collectives) : 'one rank'));
  return [
    ['straggler (the rank the others wait for at the collectives)', ...each((c) => (c.straggler === null ? 'none' : `rank ${c.straggler}${c.phase ? `, late in ${LATE_IN[c.phase]}` : ''} (${fmt(c.lateMs, 'ms')})`))],
    ['exposed communication (share of the step after the last rank arrived)', ...each((c) => fmt(100 * c.exposedShare, '%'))],
    ['all-reduce bus bandwidth', ...each((c) => (c.busBytesPerSec !== null ? `${(c.busBytesPerSec / 1e9).toFixed(2)} GB/s` : c.timing === 'step' ? 'not measured (timed once a step)' : 'not measured'))],
    ['all-reduce floor between these ranks (alone, after the measured steps)', ...each((c) => floorWords(c) ?? 'not measured')],
    ...(runs.some((r) => r.result.target.collectives?.scaling)
      ? [['scaling efficiency (against the job on this node alone)', ...runs.map((r) => (r.result.target.collectives ? (scalingWords(r.result.target.collectives) ?? 'not measured') : 'one rank'))]]
      : []),
  ];
}

function benchmarkPhases(input: ReportInput): { body: string; figures: FigureSpec[] } {
  const runs = scriptBenchmarks(input);
  if (!runs.length) {
    const wizard = input.scripts.some((r) => r.kind === 'script-optimise');
    return { body: wizard ? "No benchmark of your command among these runs: the wizard's baseline below is the reference." : '', figures: [] };
  }
  const { inputs, labels } = scriptChartInputs(runs, input.benchmarks.length + 1);
  const metrics = table(
    ['Metric', ...labels],
    [
      ['samples/s, median (sum over ranks)', ...runs.map((r) => fmt(r.result.samplesPerSec))],
      [`samples/s, ${intervalLevels(runs.map((r) => r.result.samplesPerSecCi))} CI`, ...runs.map((r) => ci(r.result.samplesPerSecCi))],
      ['batch (from the batch tensors)', ...runs.map((r) => (r.result.batchSize === null ? 'not seen' : String(r.result.batchSize)))],
      ['step, steady state', ...runs.map((r) => fmt(r.result.stepTime.steadyStateMeanMs, 'ms'))],
      ['data wait (slowest rank, last launch)', ...runs.map((r) => `${fmt(r.result.target.dataWait.msPerStep, 'ms')} (${fmt(r.result.target.dataWait.percent, '%')})`)],
      ['CUDA peak memory', ...runs.map((r) => (r.result.target.memory.cudaPeakBytes === null ? 'no CUDA' : fmt(r.result.target.memory.cudaPeakBytes / MiB, 'MiB')))],
      ['timing', ...runs.map((r) => r.result.target.ranks[0]?.timing ?? 'n/a')],
      // An estimate (the probe counts Linear and Conv layers): the method is in the text.
      ['model FLOPs utilisation, of torch.mm measured on the device (estimate)', ...runs.map((r) => scriptMfu(r.result))],
      ['compute floor per step (the step over it)', ...runs.map((r) => floorCell(r.result, (f) => f.compute))],
      ['host-to-device copy floor per step (the step over it)', ...runs.map((r) => floorCell(r.result, (f) => f.copy))],
      ['data floor per step', ...runs.map((r) => floorCell(r.result, (f) => f.data))],
      ['GPU energy per sample (mJ)', ...runs.map((r) => (r.result.energy ? fmt(1000 * r.result.energy.joulesPerSample) : r.result.energyMissing === undefined ? 'not recorded' : 'not measured'))],
      ...collectiveRows(runs),
    ],
  );
  const compared = runs.map((r, i) => ({ id: r.id, chart: inputs[i], phasesMs: r.result.phasesMs, phasesPercent: r.result.phasesPercent }));
  const phases = phaseTable(compared, labels, 'Phase (ms per step)');
  const figures: FigureSpec[] = comparisonFigures(compared, labels, {
    phases: 'script-phases.svg',
    phasesTitle: 'Time per step by phase, your command',
    throughput: 'script-throughput.svg',
    throughputTitle: `Samples/s with ${intervalLevels(runs.map((r) => r.result.samplesPerSecCi))} CI, your command`,
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
      ...runs.flatMap((r, i) => (r.result.target.collectives ? [`Ranks at the collectives, ${labels[i]}: ${printable(r.result.target.collectives.why)}.`, ''] : [])),
      ...figures.map((f) => figureLink(f.alt, f.name)),
      ...(findings.length ? ['', 'Findings:', '', ...findings] : []),
      ...telemetry.flatMap((t) => (t.lines.length ? ['', ...t.lines] : [])),
    ].join('\n'),
    figures: [...figures, ...telemetry.flatMap((t) => t.figures)],
  };
}

const FLOOR_NAMES: Record<'compute' | 'copy' | 'data', string> = { compute: 'Compute floor', copy: 'Host-to-device copy floor', data: 'Data floor' };

/** The Physical limits section for scripts: each benchmark's floors beside its step, as the engine's are given. */
function scriptLimitsBody(input: ReportInput): string {
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

export const phasesSection = bothTargets(enginePhases, (input) => {
  const p = scriptPhases(input);
  return block('script-phases', p.body, p.figures);
});
export const limitsSection = bothTargets(engineLimits, (input) => block('script-limits', scriptLimitsBody(input)));
