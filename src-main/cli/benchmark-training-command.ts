import { Command } from 'commander';

import type { BenchmarkPhases, BenchmarkProgress, TrainingBenchmarkResult } from '../api/benchmark';
import { PHASE_NAMES_WITH_OTHER, TrainingBenchmarkRequestSchema } from '../api/benchmark';
import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import { processMemoryText } from '../api/process-memory-words';
import { energyText, utilisationText } from '../api/utilisation-words';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace';
import { benchmarkScript, benchmarkScriptCommand } from './benchmark-script-command';
import { eitherTarget } from './either-target';
import { warnIfEmulated } from './emulation-note';
import { intArg, measuredTarget, type MeasuredTargetFlags, measuredTargetOptions } from './train-inputs';

interface BenchmarkFlags extends MeasuredTargetFlags {
  warmupSteps: number;
  steps: number;
  repeat: number;
  json?: boolean;
  progress: boolean;
  workspace: string;
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;

function phaseTable(ms: BenchmarkPhases, percent: BenchmarkPhases): string[] {
  return PHASE_NAMES_WITH_OTHER.map((p) => `  ${p.padEnd(10)} ${ms[p].toFixed(3).padStart(10)} ms ${percent[p].toFixed(1).padStart(6)}%`);
}

/** The benchmark as a person reads it: figures first, then where the step goes, then what to do. */
export function formatTrainingBenchmark(r: TrainingBenchmarkResult): string {
  const ci = r.samplesPerSecCi;
  const t = r.telemetry;
  const m = r.memory;
  const kinds = (x: typeof m.predicted) =>
    `weights ${mb(x.weights)}, gradients ${mb(x.gradients)}, optimizer ${mb(x.optimizerState)}, activations ${mb(x.activations + x.activationGrads)}, batches ${mb(x.batchData)}, workspace ${mb(x.workspace)}, total ${mb(x.total)}`;
  const pct = (x: number | null) => (x === null ? 'n/a' : `${x.toFixed(0)}%`);
  const lines = [
    `benchmark  ${r.title}`,
    `setup      ${r.device}, ${r.precision}, ${r.optimizer}, batch ${r.batchSize} x accumulation ${r.accumulation}; ${r.warmupSteps} warm-up + ${r.steps} measured steps, ${r.repeat} repetition(s), each a fresh trainer`,
    '',
    'rep  samples/s   steady ms   wall-clock ms',
    ...r.repetitions.map((x) => `${String(x.repetition).padStart(3)} ${n0(x.samplesPerSec).padStart(10)} ${x.steadyStateMeanMs.toFixed(3).padStart(11)} ${x.wallClockMeanMs.toFixed(3).padStart(15)}`),
    '',
    `samples/s  ${n0(ci.median)} median, 95% CI [${n0(ci.low)}, ${n0(ci.high)}] (bootstrap over ${r.repeat} repetitions)`,
    `step time  ${r.stepTime.steadyStateMeanMs.toFixed(3)} ms steady state (after warm-up); ${r.stepTime.wallClockMeanMs.toFixed(3)} ms wall-clock mean (every step, warm-up included)`,
    `epoch      ${r.stepsPerEpoch} steps: ${r.predictedEpochSeconds.fromSteadyState.toFixed(2)} s from the steady state, ${r.predictedEpochSeconds.fromWallClock.toFixed(2)} s from the wall-clock mean`,
    'phases     ms per step over the measured steps, and share of the step',
    ...phaseTable(r.phasesMs, r.phasesPercent),
    `memory     ${m.device}: measured ${kinds(m.measured)}`,
    `           predicted ${kinds(m.predicted)}${m.deviceTotalBytes ? `; device ${mb(m.deviceTotalBytes)}` : ''}`,
    ...processPeaks(r),
    ...(r.utilisation ? [`utilisation ${utilisationText(r.utilisation)}`] : []),
    ...(energyText(r) ? [`energy     ${energyText(r)}`] : []),
    t.gpuUtilizationMean === null
      ? `telemetry  GPU: ${t.gpu}; CPU ${pct(t.cpuMean)} mean over ${t.samples} samples in the measured window`
      : `telemetry  GPU ${t.gpu}: utilisation ${pct(t.gpuUtilizationMean)} mean, ${pct(t.gpuUtilizationP95)} p95; peak memory ${t.gpuMemoryPeakMiB ?? 'n/a'} MiB; power ${t.gpuPowerMeanW?.toFixed(0) ?? 'n/a'} W mean; CPU ${pct(t.cpuMean)} (${t.samples} samples in the measured window)`,
    'findings',
    ...(r.findings.length ? r.findings.map((f) => `  ${f.severity === 'warning' ? '!' : '-'} ${f.text}`) : ['  none: no threshold was crossed']),
    `saved      ${r.runDir} in the workspace (run.json, events.jsonl, telemetry-rep*.jsonl)`,
  ];
  return lines.join('\n');
}

function progressLine(p: BenchmarkProgress): string {
  if (p.phase === 'preparing') return 'preparing the data (the first run caches it)';
  if (p.phase === 'repetition-done') return `repetition ${p.repetition} of ${p.repetitions}: ${n0(p.samplesPerSec ?? 0)} samples/s`;
  return `repetition ${p.repetition} of ${p.repetitions}: step ${p.step} of ${p.totalSteps} (${p.phase})`;
}

async function benchmarkTraining(flags: BenchmarkFlags): Promise<void> {
  const { spec, data, options } = await measuredTarget(flags);
  const parsed = TrainingBenchmarkRequestSchema.safeParse({ spec, data, options, warmupSteps: flags.warmupSteps, steps: flags.steps, repeat: flags.repeat });
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `bad benchmark option: ${formatIssues(parsed.error, 'request')}`);

  const services = await createServices({ workspaceDir: flags.workspace });
  const emulated = await warnIfEmulated(services, parsed.data.options.device);
  let jobId: string | null = null;
  const onSigint = () => {
    if (!jobId) process.exit(130);
    process.stderr.write('\ncancelling the benchmark...\n');
    void services.benchmarks.cancel(jobId);
  };
  process.on('SIGINT', onSigint);
  let last = '';
  try {
    const result = await services.benchmarks.run(parsed.data, {
      allowPathsOutsideWorkspace: true,
      onProgress: (p) => {
        jobId = p.jobId;
        const line = progressLine(p);
        if (flags.progress && !flags.json && line !== last) process.stderr.write(`${line}\n`);
        last = line;
      },
    });
    process.stdout.write((flags.json ? JSON.stringify(result, null, 2) : formatTrainingBenchmark(result) + (emulated ? `\nwarning    ${emulated}` : '')) + '\n');
  } finally {
    process.off('SIGINT', onSigint);
    await services.dispose();
  }
}

export function benchmarkTrainingCommand(): Command {
  const cmd = new Command('benchmark-training').description(
    "time the real training step, of an engine model or of your own command after '--': step times (steady state and wall clock), phases, samples/s with a CI, memory, GPU telemetry, findings",
  );
  measuredTargetOptions(cmd, ' (sets the predicted epoch time)')
    .option('--warmup-steps <n>', 'optimizer steps before the steady-state clock starts', intArg('--warmup-steps', 0), 5)
    .option('--steps <n>', 'optimizer steps measured after the warm-up', intArg('--steps', 1), 50)
    .option('--repeat <n>', 'repetitions, each a fresh trainer (3 or more for a meaningful CI)', intArg('--repeat', 1), 3)
    .option('--seed <n>', 'seed for initialisation and shuffling', intArg('--seed', 0))
    .option('--json', 'print the result as JSON')
    .option('--no-progress', 'no progress lines on stderr')
    .option('--workspace <dir>', 'workspace folder (the benchmark is saved there as a run)', defaultWorkspaceDir());
  return eitherTarget(cmd, benchmarkTraining, { options: benchmarkScriptCommand(), alias: 'benchmark-script', run: benchmarkScript });
}

/** Each repetition's engine-process peak beside the accounting: flat across repetitions, or something is kept. */
function processPeaks(r: TrainingBenchmarkResult): string[] {
  const peaks = r.repetitions.flatMap((x) => (x.processMemory ? [x.processMemory] : []));
  if (!peaks.length) return [];
  const mb = (b: number) => `${(b / 1e6).toFixed(0)} MB`;
  return [`           engine process peak per repetition: ${peaks.map((p) => mb(p.peakRssBytes)).join(', ')} resident (${processMemoryText(peaks[peaks.length - 1])})`];
}
