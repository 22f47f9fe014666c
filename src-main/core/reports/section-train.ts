// A whole training run in the report, either target: the figures every run has (steps, time, samples/s,
// step time) in one table with what only its target measured below them, then its curves and telemetry.
import { PHASE_NAMES } from '../../api/benchmark';
import { lossCurveOption, phaseBarsOption, phaseTotalMs, trainPhasesOver, scriptLossOption, scriptRunCurves, scriptRunLabels, scriptThroughputOption } from '../../api/charts/run-charts';
import type { EngineTrainRun, ScriptTrainRun } from '../../api/train-result';
import { code, figureLink, fmt, MB, MiB, table } from './markdown';
import type { FigureSpec } from './report-model';
import type { ScriptTrainReportRun, TrainRun } from './report-runs';
import { overridesText } from './report-runs';
import { telemetryFigures } from './telemetry-figures';
import { runSlug } from './run-slug';

type Row = [string, string];

/** Our engine's own rows: its samples, its held-out evaluation (or that there was none), its memory. */
function engineRows(r: EngineTrainRun): Row[] {
  const { test, processMemory: pm } = r.target;
  const none = 'no test set (nothing held out)';
  return [
    ['samples', fmt(r.target.samples)],
    ['test accuracy', test ? (test.accuracy === null ? 'not a classification task' : fmt(100 * test.accuracy, '%')) : none],
    ['test loss', test ? fmt(test.loss) : none],
    ['training memory, measured (MB)', fmt(r.target.memory.measured.total / MB)],
    ['engine process peak resident (MB)', pm ? `${fmt(pm.peakRssBytes / MB)}${pm.fileRssBytes === null ? '' : `, ${fmt(pm.fileRssBytes / MB)} of it the mapped dataset and code`}` : 'not recorded'],
  ];
}

/** A script's own rows: how it ended, its slowest rank's data wait, its last loss, its CUDA memory. */
function scriptRows(r: ScriptTrainRun): Row[] {
  const t = r.target;
  return [
    ['ended', t.ended === 'exit' ? `on its own, exit code ${String(t.exitCode)}` : t.ended === 'maxSteps' ? 'stopped by the probe at --max-steps' : `with an error${t.signal ? ` (${t.signal})` : ''}`],
    ['data wait', t.dataWait ? `${fmt(t.dataWait.msPerStep, 'ms')} (${fmt(t.dataWait.percent, '%')})` : 'not measured'],
    ['last training loss', t.lastLoss ? `${fmt(t.lastLoss.value)} at step ${t.lastLoss.step}` : (t.lossNote ?? 'not read')],
    ['CUDA peak memory', t.peakMemory.cudaPeakBytes === null ? 'no CUDA' : fmt(t.peakMemory.cudaPeakBytes / MiB, 'MiB')],
  ];
}

/** The engine's curves: the step's phases and the loss and accuracy from its step events. */
function engineFigures(run: TrainRun): { lines: string[]; figures: FigureSpec[] } {
  const r = run.result;
  const lines: string[] = [];
  const figures: FigureSpec[] = [];
  if (phaseTotalMs(r.phasesMs) > 0) {
    figures.push({ name: `phases-${runSlug(run.id)}.svg`, title: 'Time per step by phase', alt: `Time per step by phase, run ${run.id}: ${PHASE_NAMES.map((p) => `${p} ${fmt(r.phasesMs[p], 'ms')}`).join(', ')}`, runId: run.id, option: phaseBarsOption(r.phasesMs, trainPhasesOver(r.target.kind)), height: 260 });
    lines.push(figureLink(figures[0].alt, figures[0].name), '');
  } else {
    lines.push(`Run ${code(run.id)} recorded no phase times.`, '');
  }
  if (run.steps.length >= 2) {
    const last = run.steps[run.steps.length - 1];
    const loss: FigureSpec = { name: `loss-${runSlug(run.id)}.svg`, title: 'Training loss and accuracy', alt: `Training loss and accuracy over ${fmt(last.globalStep)} steps of run ${run.id}: last loss ${fmt(last.loss)}`, runId: run.id, option: lossCurveOption(run.steps) };
    figures.push(loss);
    lines.push(figureLink(loss.alt, loss.name), '');
  } else {
    lines.push(`The loss curve is left out: run ${code(run.id)} recorded ${run.steps.length} step event${run.steps.length === 1 ? '' : 's'} (two are needed for a curve).`, '');
  }
  return { lines, figures };
}

/** A script's curves: samples/s with its data wait, and the loss the probe read, over steps. */
function scriptFigures(run: ScriptTrainReportRun): { lines: string[]; figures: FigureSpec[] } {
  const curves = scriptRunCurves(run.result.target.series);
  const labels = scriptRunLabels(curves);
  const figures: FigureSpec[] = [
    { name: `script-run-throughput-${runSlug(run.id)}.svg`, title: 'Samples/s and data wait over steps', alt: labels.throughput, runId: run.id, option: scriptThroughputOption(curves.rate, curves.dataWait) },
    ...(curves.loss.length ? [{ name: `script-run-loss-${runSlug(run.id)}.svg`, title: 'Training loss over steps', alt: labels.loss, runId: run.id, option: scriptLossOption(curves.loss) }] : []),
  ];
  const lossNote = run.result.target.lossNote && run.result.target.lastLoss ? [`Loss: ${run.result.target.lossNote}`, ''] : [];
  return { lines: [...lossNote, ...figures.flatMap((f) => [figureLink(f.alt, f.name), ''])], figures };
}

/** A training run of either target: its heading, one table, its curves and its telemetry. */
export function trainRunPart(run: TrainRun | ScriptTrainReportRun): { body: string; figures: FigureSpec[] } {
  const r = run.result;
  const engine = run.kind === 'train';
  const rows: Row[] = [
    [engine ? 'steps' : 'steps (rank 0)', fmt(r.steps)],
    ['wall clock', fmt(r.seconds, 's')],
    engine
      ? ['samples/s, wall clock incl. warm-up and evaluation', fmt(r.samplesPerSec)]
      : ['samples/s after the warm-up (sum over ranks)', r.samplesPerSec === undefined ? 'no step after the warm-up' : fmt(r.samplesPerSec)],
    ['step time, steady state (ms)', r.stepTime.steadyStateMeanMs === null ? 'not measured (too few steps)' : fmt(r.stepTime.steadyStateMeanMs)],
    [engine ? 'step time, wall-clock mean incl. warm-up and evaluation (ms)' : 'step time, wall-clock mean incl. warm-up (ms)', r.stepTime.wallClockMeanMs === null ? 'not measured' : fmt(r.stepTime.wallClockMeanMs)],
    ...(run.kind === 'train' ? engineRows(run.result) : scriptRows(run.result)),
  ];
  const own = run.kind === 'train' ? engineFigures(run) : scriptFigures(run);
  const telemetry = telemetryFigures(run.id, run.telemetry);
  const heading = run.kind === 'train' ? `#### Training run ${code(run.id)}` : `### Training run ${code(run.id)} (overrides ${overridesText(run.result.target.overrides)})`;
  return {
    body: [heading, '', table(['Metric', 'Value'], rows), '', ...own.lines, ...telemetry.lines.flatMap((l) => [l, ''])].join('\n').trimEnd(),
    figures: [...own.figures, ...telemetry.figures],
  };
}
