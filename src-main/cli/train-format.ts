import { processMemoryText } from '../api/process-memory-words';
import type { ScriptTrainResult } from '../api/script-run';
import { printable } from '../api/shell-word';
import type { TrainResult } from '../api/training';

// What `train` prints at the end: an engine run's summary, or a script's (a command after '--').

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const mb = (b: number | null) => (b === null ? 'n/a' : `${(b / 1e6).toFixed(1)} MB`);

function telemetryLine(result: TrainResult): string {
  const t = result.telemetry;
  const pct = (x: number | null) => (x === null ? 'n/a' : `${x.toFixed(0)}%`);
  const gpu =
    t.gpuUtilizationMean === null
      ? `GPU: ${t.gpu}`
      : `GPU ${t.gpu}: utilization ${pct(t.gpuUtilizationMean)} mean, ${pct(t.gpuUtilizationP95)} p95; peak memory ${t.gpuMemoryPeakMiB} MiB; power ${t.gpuPowerMeanW?.toFixed(0) ?? 'n/a'} W mean`;
  return `${gpu}; CPU ${pct(t.cpuMean)} mean over ${t.samples} samples (telemetry.jsonl)`;
}

function memoryLine(result: TrainResult): string {
  const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
  const p = result.memory.predicted;
  const line = `${mb(result.memory.measured.total)} measured on the ${result.memory.device}, ${mb(p.total)} predicted: weights ${mb(p.weights)}, gradients ${mb(p.gradients)}, optimizer ${mb(p.optimizerState)}, activations ${mb(p.activations + p.activationGrads)}, batches ${mb(p.batchData)}, workspace ${mb(p.workspace)}`;
  return result.processMemory ? `${line}\n         ${processMemoryText(result.processMemory)}` : line;
}

function backendLine(result: TrainResult): string {
  const b = result.backend;
  if (!b) return result.memory.device;
  const scale = result.lossScale !== undefined ? `; loss scale ${result.lossScale}` : '';
  const skipped = result.skippedSteps !== undefined ? `, ${result.skippedSteps} step(s) skipped for inf/nan gradients` : '';
  const scaling = scale + skipped;
  const gemm = b.gemm as { shapes?: { chosen: string }[] } | undefined;
  const shapes = gemm?.shapes ?? [];
  const lt = shapes.filter((g) => g.chosen === 'cublasLt').length;
  const gemmLine = shapes.length ? `; GEMM: ${shapes.length} shapes, ${lt} on cuBLASLt, ${shapes.length - lt} on own kernels` : '';
  const caveat = typeof b.caveat === 'string' ? `\n         note: ${b.caveat}` : '';
  return `${b.device}, ${b.precision}; timing: ${b.timing}${scaling}${gemmLine}${caveat}`;
}

/** The run as a person reads it: the model, the result, the speed, where the step goes, memory and hardware. */
export function formatTrain(result: TrainResult, modelName: string): string {
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  const t = result.stepTime;
  const phases = Object.entries(result.phasesMs)
    .map(([k, v]) => `${k} ${v.toFixed(1)}`)
    .join(' · ');
  const test = result.test;
  const lines = [
    `model    ${modelName} (${result.model.family}, ${n(result.model.params)} parameters, ${(result.model.flopsPerSample / 1e6).toFixed(2)} MFLOP/sample forward)`,
    `data     ${result.data}, read through the dataset cache`,
    test
      ? `result   ${result.model.family === 'bottleneck_resnet' ? 'policy top-1 agreement with the targets' : 'test accuracy'} ${test.accuracy == null ? 'n/a' : `${(100 * test.accuracy).toFixed(2)}%`} (loss ${test.loss.toFixed(4)}) on ${n(test.samples)} test samples after ${result.epochs.length} epoch(s), ${n(result.steps)} steps`
      : `result   ${n(result.steps)} steps, no test set`,
    `speed    ${n(result.samplesPerSec)} samples/s over ${result.seconds.toFixed(1)} s on ${result.threads} threads; step ${t.steadyStateMeanMs == null ? 'n/a' : `${t.steadyStateMeanMs.toFixed(1)} ms steady state`}, ${t.wallClockMeanMs.toFixed(1)} ms wall-clock mean (warm-up and evaluation included)`,
    `device   ${backendLine(result)}`,
    `phases   ${phases} (ms per step)`,
    `memory   ${memoryLine(result)}`,
    `hardware ${telemetryLine(result)}`,
    `saved    ${result.runDir} in the workspace (run.json, events.jsonl, checkpoint.safetensors)`,
  ];
  return lines.join('\n');
}

/** A script's run as a person reads it. */
export function formatScriptRun(r: ScriptTrainResult): string {
  const ended = r.ended === 'maxSteps' ? 'stopped by Trainbench at --max-steps' : 'ended on its own';
  return [
    `run        ${printable(r.title)}`,
    `setup      ${r.device}, batch ${r.batchSize ?? 'unknown'} per rank, ${r.worldSize} rank(s); ${ended} after ${r.seconds.toFixed(1)} s`,
    `steps      ${n0(r.steps)} optimizer steps`,
    `samples/s  ${r.samplesPerSec === undefined ? 'n/a' : n0(r.samplesPerSec)} over the steps after the first ${r.warmupSteps}${r.worldSize > 1 ? ' (sum over ranks)' : ''}`,
    `step time  ${r.stepTime.steadyStateMeanMs === null ? 'n/a' : `${r.stepTime.steadyStateMeanMs.toFixed(3)} ms`} steady state; ${r.stepTime.wallClockMeanMs === null ? 'n/a' : `${r.stepTime.wallClockMeanMs.toFixed(3)} ms`} every step`,
    `data wait  ${r.dataWait ? `${r.dataWait.msPerStep.toFixed(3)} ms per step, ${r.dataWait.percent.toFixed(1)}% of the step` : 'n/a (no DataLoader seen)'}`,
    `loss       ${r.lastLoss ? `${r.lastLoss.value.toPrecision(5)} at step ${r.lastLoss.step}` : (r.lossNote ?? 'none read')}`,
    `memory     CUDA peak ${mb(r.peakMemory.cudaPeakBytes)}; host peak RSS ${mb(r.peakMemory.hostPeakRssBytes)}`,
    `saved      ${r.runDir} in the workspace (run.json, events.jsonl, telemetry.jsonl, output.log)`,
  ].join('\n');
}
