import type { BenchmarkPhases, TrainingBenchmarkResult } from '../api/benchmark';
import { PHASE_NAMES_WITH_OTHER } from '../api/benchmark';
import { processMemoryText } from '../api/process-memory-words';
import type { ScriptBenchmarkResult } from '../api/script-target';
import { energyText, floorRows, SCRIPT_ENERGY_WINDOW, utilisationText } from '../api/utilisation-words';

// What `benchmark-training` prints: an engine benchmark's result, or a script's (a command after '--').

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const mb = (b: number | null) => (b === null ? 'n/a' : `${(b / 1e6).toFixed(1)} MB`);

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

/** Each repetition's engine-process peak beside the accounting: flat across repetitions, or something is kept. */
function processPeaks(r: TrainingBenchmarkResult): string[] {
  const peaks = r.repetitions.flatMap((x) => (x.processMemory ? [x.processMemory] : []));
  if (!peaks.length) return [];
  const mb = (b: number) => `${(b / 1e6).toFixed(0)} MB`;
  return [`           engine process peak per repetition: ${peaks.map((p) => mb(p.peakRssBytes)).join(', ')} resident (${processMemoryText(peaks[peaks.length - 1])})`];
}

/** A script launch's whole process tree: how many, their CPU, their peak memory. */
function processTreeLine(r: ScriptBenchmarkResult): string[] {
  const t = r.repetitions[r.repetitions.length - 1].processTree;
  if (!t) return [];
  return [`processes  ${t.processes} at most (ranks, DataLoader workers); CPU ${t.cpuPercent === null ? 'n/a' : `${t.cpuPercent.toFixed(0)}% of one core`} over the measured steps; peak RSS ${mb(t.peakRssBytes)} (the last launch's whole tree)`];
}

/** The model FLOPs the probe counted (an estimate) and the utilisation they give, or why there is none. */
function scriptFlopsLines(r: ScriptBenchmarkResult): string[] {
  if (!r.flops) return [];
  if (r.flops.forwardPerSample === null || !r.utilisation) return [`utilisation not estimated: ${r.flops.method}`];
  return [
    `utilisation ${utilisationText(r.utilisation)}`,
    `           an estimate: ${n0(r.flops.forwardPerSample)} forward FLOPs per sample counted by ${r.flops.method}, over ${r.flops.layers} layer(s), three times for training`,
  ];
}

/** The compute, copy and data floors beside the measured step, as optimise's limits section gives the engine's. */
function floorLines(r: ScriptBenchmarkResult): string[] {
  if (!r.floors) return [];
  return [
    `floors     per step and rank, how far the ${r.floors.stepMs.toFixed(3)} ms step is from each, and how it was measured`,
    ...floorRows(r.floors).map((f) => `  ${f.name.padEnd(8)} ${f.stepMs.padStart(10)}  ${f.over.padEnd(12)}  ${f.derivation}`),
    `  ${r.floors.summary}`,
  ];
}

/** The result as a person reads it: figures, ranks, where the step goes, what was applied, findings. */
export function formatScriptBenchmark(r: ScriptBenchmarkResult): string {
  const ci = r.samplesPerSecCi;
  const lines = [
    `benchmark  ${r.title}`,
    `setup      ${r.device}, batch ${r.batchSize ?? 'unknown'} per rank, ${r.worldSize} rank(s); ${r.warmupSteps} warm-up + ${r.steps} measured steps, ${r.repeat} launch(es)`,
    '',
    'launch  samples/s   steady ms   wall-clock ms  ended',
    ...r.repetitions.map((x) => `${String(x.repetition).padStart(6)} ${n0(x.samplesPerSec).padStart(10)} ${x.steadyStateMeanMs.toFixed(3).padStart(11)} ${x.wallClockMeanMs.toFixed(3).padStart(15)}  ${x.ended === 'steps' ? 'stopped by the probe' : 'by itself'}`),
    '',
    `samples/s  ${n0(ci.median)} median${r.worldSize > 1 ? ' (sum over ranks)' : ''}, 95% CI [${n0(ci.low)}, ${n0(ci.high)}] (bootstrap over ${r.repeat} launches)`,
    `step time  ${r.stepTime.steadyStateMeanMs.toFixed(3)} ms steady state; ${r.stepTime.wallClockMeanMs.toFixed(3)} ms wall-clock mean (warm-up included)`,
    `data wait  ${r.dataWait.msPerStep.toFixed(3)} ms per step, ${r.dataWait.percent.toFixed(1)}% of the step (rank ${r.dataWait.rank}, the slowest)`,
    ...(r.worldSize > 1
      ? ['ranks      rank  samples/s  steps  data wait', ...r.ranks.map((k) => `           ${String(k.rank).padStart(4)} ${n0(k.samplesPerSec).padStart(10)} ${String(k.measuredSteps).padStart(6)}  ${k.dataWaitPercent.toFixed(1)}%`)]
      : []),
    'phases     ms per step over the measured steps, and share of the step',
    ...PHASE_NAMES_WITH_OTHER.map((p) => `  ${p.padEnd(10)} ${r.phasesMs[p].toFixed(3).padStart(10)} ms ${r.phasesPercent[p].toFixed(1).padStart(6)}%`),
    `           ${r.phaseNote}`,
    `memory     ${r.memory.device}: CUDA peak ${mb(r.memory.cudaPeakBytes)}${r.memory.cudaTotalBytes ? ` of ${mb(r.memory.cudaTotalBytes)}` : ''}; host peak RSS ${mb(r.memory.hostPeakRssBytes)}`,
    ...processTreeLine(r),
    ...scriptFlopsLines(r),
    ...floorLines(r),
    ...(energyText(r) ? [`energy     ${energyText(r)}`, ...(r.energy ? [`           ${SCRIPT_ENERGY_WINDOW}`] : [])] : []),
    `applied    ${r.applied.length ? [...new Set(r.applied.map((a) => `${a.key}=${a.value} (${a.where})`))].join('; ') : 'no overrides'}`,
    'findings',
    ...(r.findings.length ? r.findings.map((f) => `  ${f.severity === 'warning' ? '!' : '-'} ${f.text}`) : ['  none: no threshold was crossed']),
    `saved      ${r.runDir} in the workspace (run.json, events.jsonl, output-rep*.log, telemetry-rep*.jsonl)`,
  ];
  return lines.join('\n');
}
