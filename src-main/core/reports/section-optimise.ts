// The engine wizard's run in a report: its baseline and diagnosis, and its measured floors
// (its trials and decision are written for either target in section-wizard.ts).
import { intervalLevel } from '../../api/order-interval';
import { PHASE_NAMES_WITH_OTHER } from '../../api/benchmark';
import { phaseStackLabel, phaseStackOption } from '../../api/charts/benchmark-charts';
import type { Limit } from '../../api/optimise';
import { ci, code, figureLink, fmt, MiB, table } from './markdown';
import type { FigureSpec } from './report-model';
import type { OptimiseRun } from './report-runs';
import { telemetryFigures } from './telemetry-figures';
import { runSlug } from './run-slug';


/** "1. mlp cpu b64" style labels, as the benchmark charts number them. */
function chartInput(run: OptimiseRun, label: string, samplesPerSec: { low: number; median: number; high: number }) {
  const b = run.result.baseline;
  const o = run.result.target.baseline.config.options;
  return { title: label, device: b.device, batchSize: o.batchSize, accumulation: o.accumulation, phasesMs: b.phasesMs, samplesPerSecCi: samplesPerSec, stepTime: { steadyStateMeanMs: b.stepMs, wallClockMeanMs: b.stepMs, note: '' } };
}

export function optimiseBaselinePart(run: OptimiseRun): { lines: string[]; figures: FigureSpec[] } {
  const r = run.result;
  const b = { ...r.baseline, ...r.target.baseline };
  const { stepsWidened } = r.target;
  const label = `baseline ${b.device} b${b.config.options.batchSize}`;
  const input = [chartInput(run, label, b.samplesPerSec)];
  const phases: FigureSpec = { name: `phase-breakdown-${runSlug(run.id)}.svg`, title: "The wizard's baseline: time per step by phase", alt: phaseStackLabel(input, [label]), runId: run.id, option: phaseStackOption(input, [label]), height: 320 };
  const telemetry = telemetryFigures(run.id, run.telemetry);
  const lines = [
    `#### Optimisation wizard ${code(run.id)}: baseline and diagnosis`,
    '',
    `The wizard measured ${r.title} ${r.repeat} times as it stood (preset ${r.preset}, reading from the ${b.config.readFrom === 'cache' ? 'cache' : 'source files in place'}).`,
    '',
    ...(stepsWidened
      ? [
          `Steps per repetition were raised from ${stepsWidened.from} to ${stepsWidened.to}: ${stepsWidened.from} steps measured ${fmt(stepsWidened.windowMs)} ms, under the ${stepsWidened.minWindowSeconds} s each repetition was asked to last, so that baseline was discarded and measured again.`,
          '',
        ]
      : []),
    table(
      ['Metric', 'Baseline'],
      [
        ['samples/s, median of repetitions', fmt(b.samplesPerSec.median)],
        [`samples/s, ${intervalLevel(b.samplesPerSec)} CI`, ci(b.samplesPerSec)],
        ['noise floor (half the CI, relative)', fmt(100 * b.noiseFloor, '%')],
        ['step time (ms)', fmt(b.stepMs)],
        ['training memory (MiB)', fmt(b.memoryBytes / MiB)],
        ['GPU utilisation, mean', b.gpuUtilizationMean === null ? 'not measured' : fmt(b.gpuUtilizationMean, '%')],
        ["host CPU load, mean over the baseline's repetitions (the chart spans the whole run)", b.cpuMean === null ? 'not measured' : fmt(b.cpuMean, '%')],
      ],
    ),
    '',
    table(['Phase', 'ms per step (share)'], PHASE_NAMES_WITH_OTHER.map((p) => [p, `${fmt(b.phasesMs[p])} (${fmt(b.phasesPercent[p], '%')})`])),
    '',
    figureLink(phases.alt, phases.name),
    '',
    `Diagnosis (the wizard's, from its run file): the step is **${r.diagnosis.bound}**-bound. ${r.diagnosis.summary}`,
    '',
    ...r.diagnosis.findings.map((f) => `- ${f.text}`),
    '',
    ...telemetry.lines.flatMap((l) => [l, '']),
  ];
  return { lines, figures: [phases, ...telemetry.figures] };
}

function limitLine(name: string, l: Limit): string {
  if (l.stepMs === null) return `- ${name}: ${l.derivation}.`;
  return `- ${name}: ${fmt(l.stepMs, 'ms')} per step (${fmt(l.samplesPerSec, 'samples/s')}); the baseline is ${fmt(l.baselineOverFloor)}× that. ${l.derivation}.`;
}

export function optimiseLimitLines(run: OptimiseRun): string[] {
  const l = run.result.limits;
  return [
    `Measured by the optimisation wizard (${code(run.id)}):`,
    '',
    limitLine('Compute floor', l.compute),
    limitLine('Read floor', l.read),
    limitLine('Host-to-device floor', l.h2d),
    '',
    l.summary,
  ];
}
