// The optimisation wizard's run in a report: its baseline and diagnosis, its measured floors,
// one attempt per trial (with the hypothesis the wizard recorded), and its verdict.
import { PHASE_NAMES_WITH_OTHER } from '../../api/benchmark';
import { phaseStackLabel, phaseStackOption, throughputLabel, throughputOption } from '../../api/charts/benchmark-charts';
import type { Limit, OptimiseTrial, TrialDecision } from '../../api/optimise';
import { medianInterval } from '../stats/bootstrap';
import { code, figureLink, fmt, MiB, signedPercent, table } from './markdown';
import type { FigureSpec } from './report-model';
import type { OptimiseRun } from './report-runs';
import { telemetryFigures } from './telemetry-figures';

const ci = (i: { low: number; high: number }) => `${fmt(i.low)} to ${fmt(i.high)}`;
const speedupText = (s: { low: number; median: number; high: number }) => `${signedPercent(s.median - 1)} (95% CI ${signedPercent(s.low - 1)} to ${signedPercent(s.high - 1)})`;

/** "1. mlp cpu b64" style labels, as the benchmark charts number them. */
function chartInput(run: OptimiseRun, label: string, samplesPerSec: { low: number; median: number; high: number }) {
  const b = run.result.baseline;
  const o = b.config.options;
  return { title: label, device: b.device, batchSize: o.batchSize, accumulation: o.accumulation, phasesMs: b.phasesMs, samplesPerSecCi: samplesPerSec, stepTime: { steadyStateMeanMs: b.stepMs, wallClockMeanMs: b.stepMs, note: '' } };
}

export function optimiseBaselinePart(run: OptimiseRun): { lines: string[]; figures: FigureSpec[] } {
  const r = run.result;
  const b = r.baseline;
  const label = `baseline ${b.device} b${b.config.options.batchSize}`;
  const input = [chartInput(run, label, b.samplesPerSec)];
  const phases: FigureSpec = { name: `phase-breakdown-${run.id}.svg`, title: "The wizard's baseline: time per step by phase", alt: phaseStackLabel(input, [label]), runId: run.id, option: phaseStackOption(input, [label]), height: 320 };
  const telemetry = telemetryFigures(run.id, run.telemetry);
  const lines = [
    `#### Optimisation wizard ${code(run.id)}: baseline and diagnosis`,
    '',
    `The wizard measured ${r.title} ${r.repeat} times as it stood (preset ${r.preset}, reading from the ${b.config.readFrom === 'cache' ? 'cache' : 'source files in place'}).`,
    '',
    table(
      ['Metric', 'Baseline'],
      [
        ['samples/s, median of repetitions', fmt(b.samplesPerSec.median)],
        ['samples/s, 95% CI', ci(b.samplesPerSec)],
        ['noise floor (half the CI, relative)', fmt(100 * b.noiseFloor, '%')],
        ['step time (ms)', fmt(b.stepMs)],
        ['training memory (MiB)', fmt(b.memoryBytes / MiB)],
        ['GPU utilisation, mean', b.gpuUtilizationMean === null ? 'not measured' : fmt(b.gpuUtilizationMean, '%')],
        ['host CPU load, mean', b.cpuMean === null ? 'not measured' : fmt(b.cpuMean, '%')],
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

const TRIAL_CONCLUSIONS: Record<TrialDecision, string> = {
  accept: 'Accepted and kept: faster by more than the noise, with the loss within the tolerance.',
  reject: 'Rejected: slower, with the whole interval below 1.',
  inconclusive: 'Not kept: the difference could be noise.',
  crashed: 'Not kept: the trial did not finish.',
  'changes-results': 'Not kept: it moved the training loss beyond the tolerance.',
  proposed: 'Proposed, not kept: faster beyond the noise, but it changes the training recipe, which this wizard run was not allowed to keep.',
};

/** The candidate's and the current best's samples/s over the trial's interleaved repetitions. */
function trialRows(t: OptimiseTrial): string[][] {
  const best = t.bestSamplesPerSec.length ? medianInterval(t.bestSamplesPerSec) : null;
  const cand = t.candidateSamplesPerSec.length ? medianInterval(t.candidateSamplesPerSec) : null;
  return [
    ['samples/s, median', best ? fmt(best.median) : '-', cand ? fmt(cand.median) : '-', t.speedup ? speedupText(t.speedup) : 'not measured'],
    ['samples/s, 95% CI of the median', best ? ci(best) : '-', cand ? ci(cand) : '-', ''],
    ['repetitions (A/B interleaved)', String(t.bestSamplesPerSec.length), String(t.candidateSamplesPerSec.length), ''],
    ['mean loss over the measured steps', '', '', t.lossDelta === null ? 'not measured' : `${signedPercent(t.lossDelta)} relative`],
  ];
}

/** A trial's conclusion; a kept change whose loss was not measured (a script target) says so instead of claiming it. */
export function trialConclusion(t: Pick<OptimiseTrial, 'decision' | 'lossDelta'>): string {
  return t.decision === 'accept' && t.lossDelta === null ? 'Accepted and kept: faster by more than the noise; its effect on the loss was not measured.' : TRIAL_CONCLUSIONS[t.decision];
}

/** One wizard trial as an attempt; `said` names who reported a crash or an OOM (the engine, the script). */
export function wizardAttemptBody(n: number, runId: string, t: OptimiseTrial, said = 'The engine said'): string {
  const c = t.change;
  return [
    `### Attempt ${n}: ${c.label} (wizard trial ${t.index}, ${code(runId)})`,
    '',
    `**Objective**: measure whether ${c.label} makes the step faster than the wizard's current best configuration.`,
    '',
    `**Configuration**: ${c.knob} ${String(c.from)} → ${String(c.to)} (${c.kind} change) on top of the current best${c.note ? `; ${c.note}` : ''}.`,
    '',
    `**Hypothesis** (the wizard's, from its diagnosis): ${c.hypothesis}.`,
    '',
    '**Results**:',
    '',
    table(['Metric', 'Current best', 'Candidate', 'Change'], trialRows(t)),
    '',
    `**Analysis**: ${t.why[0].toUpperCase()}${t.why.slice(1)}.${t.error ? ` ${said}: ${t.error}.` : ''} The speedup interval is the wizard's paired bootstrap over the interleaved repetitions; the side-by-side medians above are each configuration's own.`,
    '',
    `**Conclusion**: ${trialConclusion(t)}`,
  ].join('\n');
}

/** Samples/s of the baseline, of every trial's candidate and of the final configuration, each with its CI. */
export function wizardTrialsFigure(run: OptimiseRun): FigureSpec | null {
  const r = run.result;
  const items: { label: string; ci: { low: number; median: number; high: number } }[] = [{ label: '0. baseline', ci: r.baseline.samplesPerSec }];
  for (const t of r.trials) if (t.candidateSamplesPerSec.length) items.push({ label: `${t.index}. ${t.change.label}`, ci: medianInterval(t.candidateSamplesPerSec) });
  if (items.length < 2) return null;
  const input = items.map((i) => chartInput(run, i.label, i.ci));
  const labels = items.map((i) => i.label);
  return { name: `trials-${run.id}.svg`, title: "Samples/s of each configuration the wizard measured", alt: throughputLabel(input, labels), runId: run.id, option: throughputOption(input, labels), height: 380 };
}

export function wizardSkippedLines(run: OptimiseRun): string[] {
  const s = run.result.skipped;
  if (!s.length) return [];
  return [`Changes the wizard did not try (${code(run.id)}):`, '', ...s.map((x) => `- ${x.change.label}: ${x.why}.`)];
}

export function wizardDecisionLines(run: OptimiseRun): string[] {
  const f = run.result.final;
  const lines = [`The wizard's verdict (${code(run.id)}, from its run file): ${f.verdict}`];
  if (f.changes.length) lines.push('', `Kept, in order: ${f.changes.join('; ')}. Final against baseline, measured A/B/A/B at the end: ${speedupText(f.speedup)}; ${fmt(f.samplesPerSec.median, 'samples/s')} (95% CI ${ci(f.samplesPerSec)}).`);
  const base = run.result.baseline.config;
  const changed = Object.keys(f.config.options).filter((k) => JSON.stringify((f.config.options as Record<string, unknown>)[k]) !== JSON.stringify((base.options as Record<string, unknown>)[k]));
  if (changed.length || f.config.readFrom !== base.readFrom) {
    lines.push(
      '',
      'Configuration to use:',
      '',
      table(
        ['Setting', 'Baseline', 'Use'],
        [
          ...changed.map((k) => [k, JSON.stringify((base.options as Record<string, unknown>)[k]), JSON.stringify((f.config.options as Record<string, unknown>)[k])]),
          ...(f.config.readFrom !== base.readFrom ? [['read from', base.readFrom, f.config.readFrom]] : []),
        ],
      ),
    );
  } else {
    lines.push('', "Configuration to use: the baseline's, unchanged.");
  }
  if (f.proposals.length) lines.push('', 'Proposed, not kept (they change the training recipe):', '', ...f.proposals.map((p) => `- ${p}`));
  return lines;
}
