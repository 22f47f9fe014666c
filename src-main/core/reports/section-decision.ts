// The Decision and the Consequences, for the engine's runs and for the user's own command.
import { intervalLevel } from '../../api/order-interval';
import { finalFigures } from '../../api/paired-figures';
import { lossCheckText } from '../../api/charts/optimise-charts';
import type { BenchmarkAttempt } from './attempts';
import { recommendsBaselineBatch } from './attempts';
import { code, fmt, MiB, signedPercent, speedupText } from './markdown';
import type { ReportInput, SectionOutput } from './report-model';
import { block, bothTargets } from './report-model';
import type { BenchmarkRun, ScriptBatchRun, ScriptOptimiseRun } from './report-runs';
import { optionsOf, overridesText } from './report-runs';
import { CONCLUSIONS, measurementOfBatch, scriptBenchmarkAttempts } from './section-attempts';
import { engineWizardView, scriptWizardView, trialConclusion, wizardDecisionLines } from './section-wizard';

function configuration(run: BenchmarkRun): string {
  const r = run.result;
  return `device ${r.device}, ${r.target.precision}, ${r.target.optimizer}, batch ${fmt(r.batchSize)} × accumulation ${r.target.accumulation}`;
}

function engineDecision(input: ReportInput): SectionOutput {
  const lines: string[] = [];
  const benchmarkAttempts = input.attempts.filter((a): a is BenchmarkAttempt => a.kind === 'benchmark');
  const accepted = benchmarkAttempts.filter((a) => a.decision === 'accept');
  input.attempts.forEach((a, i) => {
    if (a.kind === 'benchmark') lines.push(`- Attempt ${i + 1} (${code(a.run.id)}): ${CONCLUSIONS[a.decision]}`);
    else if (a.kind === 'optimise-trial') lines.push(`- Attempt ${i + 1} (${a.trial.change.label}, wizard trial ${a.trial.index}): ${trialConclusion(a.trial)}`);
    else {
      const measured = measurementOfBatch(input, a.run.result.recommended);
      const what =
        a.run.result.recommended === null
          ? 'no batch fits'
          : recommendsBaselineBatch(a)
            ? `batch ${fmt(a.run.result.recommended)} recommended by the batch-size search, the baseline's own: nothing to change`
            : `batch ${fmt(a.run.result.recommended)} proposed by the batch-size search, ${measured ? `measured with repetitions in ${measured.words}` : 'not yet measured with repetitions'}`;
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
    lines.push(`Use the configuration of ${code(best.run.id)} (${configuration(best.run)}): ${fmt(best.run.result.samplesPerSecCi.median, 'samples/s')}, ${signedPercent(best.speedup.median - 1)} over the baseline (${intervalLevel(best.speedup)} CI ${signedPercent(best.speedup.low - 1)} to ${signedPercent(best.speedup.high - 1)}).`);
    if (best.recipeChanges.length) lines.push('', `It changes the training recipe (${best.recipeChanges.join(', ')}): check what it trains to before adopting it.`);
    if (accepted.length > 1) lines.push('', 'Accepted attempts were each measured against the baseline alone, not combined; their effects may not add up.');
  }
  return { blocks: [{ id: 'decision', lead: '', body: lines.join('\n') }], figures: [], notes: [] };
}

function engineConsequences(input: ReportInput): SectionOutput {
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
    // The figures the Decision's speedup gives (paired-figures.ts): the final's own repetitions' interval beside it read as a second, narrower claim.
    const figures = finalFigures(f, run.result.baseline, run.result.repeat, run.result.objective);
    const rate = !figures
      ? fmt(f.samplesPerSec.median, 'samples/s')
      : !figures.remeasured
        ? `${fmt(figures.best, 'samples/s')} (the baseline's: nothing was kept)`
        : `${fmt(figures.candidate, 'samples/s')} (${figures.level} CI ${fmt(figures.candidateCi.low)} to ${fmt(figures.candidateCi.high)}, the re-measured baseline's ${fmt(figures.best)} times the speedup's interval)`;
    lines.push(`- With the wizard's configuration (${code(run.id)}): ${rate}, ${signedPercent(f.speedup.median - 1)} against its baseline.`);
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

function scriptDecisionBody(input: ReportInput): string {
  const lines: string[] = [];
  for (const run of input.scripts.filter((r): r is ScriptOptimiseRun => r.kind === 'script-optimise')) lines.push(...wizardDecisionLines(scriptWizardView(run)), '');
  const accepted = scriptBenchmarkAttempts(input).filter((a) => a.decision === 'accept').sort((x, y) => y.speedup.median - x.speedup.median)[0];
  if (accepted) lines.push(`Among the benchmarks, ${code(accepted.run.id)} (${overridesText(accepted.run.result.target.overrides)}) is the fastest beyond the noise: ${speedupText(accepted.speedup)}.`, '');
  for (const s of input.scripts.filter((r): r is ScriptBatchRun => r.kind === 'script-batch-search')) lines.push(`Batch size (${code(s.id)}): ${s.result.verdict}.`, '');
  const others = scriptBenchmarkAttempts(input).filter((a) => a !== accepted);
  for (const a of others) lines.push(`- ${code(a.run.id)} (${overridesText(a.run.result.target.overrides)}): ${CONCLUSIONS[a.decision]}`);
  for (const run of input.scripts.filter((r): r is ScriptOptimiseRun => r.kind === 'script-optimise')) {
    for (const t of run.result.trials) lines.push(`- ${t.change.label} (wizard trial ${t.index}): ${trialConclusion(t)}`);
  }
  return lines.join('\n').trim() || 'Nothing was measured against a baseline, so there is no decision yet: benchmark your command again with one override changed.';
}

function scriptConsequencesBody(input: ReportInput): string {
  const caveats = input.scripts.flatMap((r) => {
    const out: string[] = [];
    if ((r.kind === 'script-benchmark' || r.kind === 'script-train') && r.telemetry.length === 0) out.push(`${code(r.id)} recorded no telemetry, so its GPU and CPU load are unknown.`);
    if (r.kind === 'script-benchmark' && r.result.repetitions.some((x) => x.target.ended === 'exit')) out.push(`${code(r.id)}: a launch ended on its own before the measured steps were done; its window is shorter.`);
    return out;
  });
  const trains = input.scripts.filter((r) => r.kind === 'script-train');
  // The wizard's loss guard: what it compared over its short launches, with which seed, or why it could not.
  const guards = input.scripts.flatMap((r) => (r.kind === 'script-optimise' ? [`The wizard ${code(r.id)} checked the loss: ${lossCheckText(r.result.target.lossCheck, r.result.preset)}.`] : []));
  return [
    ...guards,
    trains.length
      ? `The benchmarks compare speed only, and the wizard's loss guard sees a few dozen steps. The training run${trains.length === 1 ? '' : 's'} ${trains.map((r) => code(r.id)).join(', ')} show${trains.length === 1 ? 's' : ''} the loss over a whole run: compare it with a run of the script as it was before keeping a change that alters the numerics (mixed precision, matmul precision, a batch size).`
      : "The benchmarks compare speed only, and the wizard's loss guard sees a few dozen steps: train with the kept settings (trainbench train -- your command) and compare the loss curve with the script's before relying on a change that alters the numerics (mixed precision, matmul precision, a batch size).",
    'The numbers hold for this machine and this load; on a shared machine repeat the runs before quoting them.',
    ...caveats,
  ].join('\n\n');
}

export const decisionSection = bothTargets(engineDecision, (input) => block('script-decision', scriptDecisionBody(input)));
export const consequencesSection = bothTargets(engineConsequences, (input) => block('script-consequences', scriptConsequencesBody(input)));
