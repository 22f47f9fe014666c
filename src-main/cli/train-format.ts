import { processMemoryText } from '../api/process-memory-words';
import { printable } from '../api/shell-word';
import type { EngineTrainDetail, ScriptTrainDetail, TrainRunResult } from '../api/train-result';

// What `train` prints at the end, either target: the lines every run has (steps, samples/s, step time,
// phases, hardware, files), with our engine's (model, data, test result, device, memory) or a script's
// (setup, data wait, loss, CUDA memory) beside them.

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const mb = (b: number | null) => (b === null ? 'n/a' : `${(b / 1e6).toFixed(1)} MB`);
const ms = (x: number | null, digits: number) => (x === null ? 'n/a' : `${x.toFixed(digits)} ms`);
const line = (label: string, text: string) => `${label.padEnd(10)} ${text}`;

function telemetryText(r: TrainRunResult): string {
  const t = r.telemetry;
  const pct = (x: number | null) => (x === null ? 'n/a' : `${x.toFixed(0)}%`);
  const gpu =
    t.gpuUtilizationMean === null
      ? `GPU: ${t.gpu}`
      : `GPU ${t.gpu}: utilization ${pct(t.gpuUtilizationMean)} mean, ${pct(t.gpuUtilizationP95)} p95; peak memory ${t.gpuMemoryPeakMiB} MiB; power ${t.gpuPowerMeanW?.toFixed(0) ?? 'n/a'} W mean`;
  return `${gpu}; CPU ${pct(t.cpuMean)} mean over ${t.samples} samples (telemetry.jsonl)`;
}

function engineMemoryText(e: EngineTrainDetail): string {
  const p = e.memory.predicted;
  const text = `${mb(e.memory.measured.total)} measured on the ${e.memory.device}, ${mb(p.total)} predicted: weights ${mb(p.weights)}, gradients ${mb(p.gradients)}, optimizer ${mb(p.optimizerState)}, activations ${mb(p.activations + p.activationGrads)}, batches ${mb(p.batchData)}, workspace ${mb(p.workspace)}`;
  return e.processMemory ? `${text}\n${' '.repeat(11)}${processMemoryText(e.processMemory)}` : text;
}

function backendText(e: EngineTrainDetail): string {
  const b = e.backend;
  if (!b) return e.memory.device;
  const scale = e.lossScale !== undefined ? `; loss scale ${e.lossScale}` : '';
  const skipped = e.skippedSteps !== undefined ? `, ${e.skippedSteps} step(s) skipped for inf/nan gradients` : '';
  const gemm = b.gemm as { shapes?: { chosen: string }[] } | undefined;
  const shapes = gemm?.shapes ?? [];
  const lt = shapes.filter((g) => g.chosen === 'cublasLt').length;
  const gemmText = shapes.length ? `; GEMM: ${shapes.length} shapes, ${lt} on cuBLASLt, ${shapes.length - lt} on own kernels` : '';
  const caveat = typeof b.caveat === 'string' ? `\n${' '.repeat(11)}note: ${b.caveat}` : '';
  return `${b.device}, ${b.precision}; timing: ${b.timing}${scale}${skipped}${gemmText}${caveat}`;
}

/** Our engine's own lines: the model, the data, what the held-out set says (or that there was none). */
function engineHead(r: TrainRunResult, e: EngineTrainDetail, modelName: string): string[] {
  const test = e.test;
  const what = e.model.family === 'bottleneck_resnet' ? 'policy top-1 agreement with the targets' : 'test accuracy';
  return [
    line('model', `${modelName} (${e.model.family}, ${n0(e.model.params)} parameters, ${(e.model.flopsPerSample / 1e6).toFixed(2)} MFLOP/sample forward)`),
    line('data', `${e.data}, read through the dataset cache`),
    test
      ? line('result', `${what} ${test.accuracy == null ? 'n/a' : `${(100 * test.accuracy).toFixed(2)}%`} (loss ${test.loss.toFixed(4)}) on ${n0(test.samples)} test samples after ${e.epochs.length} epoch(s)`)
      : line('result', 'no test set: the accuracy is on the records the model trained on (fitting them can reach 100%), not on unseen data; hold out a split when importing (cache build --test-fraction 0.2) or choose one with --test <dataset>'),
    line('device', backendText(e)),
  ];
}

/** A script's own lines: how it ran and ended. */
function scriptHead(r: TrainRunResult, s: ScriptTrainDetail): string[] {
  const ended = s.ended === 'maxSteps' ? 'stopped by Trainbench at --max-steps' : 'ended on its own';
  return [line('setup', `${r.device}, batch ${r.batchSize ?? 'unknown'} per rank, ${s.worldSize} rank(s); ${ended} after ${r.seconds.toFixed(1)} s`)];
}

function scriptTail(s: ScriptTrainDetail): string[] {
  return [
    line('data wait', s.dataWait ? `${s.dataWait.msPerStep.toFixed(3)} ms per step, ${s.dataWait.percent.toFixed(1)}% of the step` : 'n/a (no DataLoader seen)'),
    line('loss', s.lastLoss ? `${s.lastLoss.value.toPrecision(5)} at step ${s.lastLoss.step}` : (s.lossNote ?? 'none read')),
    line('memory', `CUDA peak ${mb(s.peakMemory.cudaPeakBytes)}; host peak RSS ${mb(s.peakMemory.hostPeakRssBytes)}`),
  ];
}

/** A training run as a person reads it, either target; `modelName` is how the engine's model was asked for. */
export function formatTrainRun(r: TrainRunResult, modelName = r.title): string {
  const t = r.target;
  const engine = t.kind === 'engine';
  const rate =
    r.samplesPerSec === undefined
      ? 'n/a'
      : engine
        ? `${n0(r.samplesPerSec)} over the whole ${r.seconds.toFixed(1)} s on ${t.threads} threads (warm-up and evaluation included)`
        : `${n0(r.samplesPerSec)} over the steps after the first ${r.stepTime.warmupSteps}${t.worldSize > 1 ? ' (sum over ranks)' : ''}`;
  const digits = engine ? 1 : 3;
  const phases = r.phasesMs
    ? Object.entries(r.phasesMs)
        .map(([k, v]) => `${k} ${v.toFixed(1)}`)
        .join(' · ') + ' (ms per step)'
    : 'n/a (no step was measured)';
  return [
    line('run', printable(r.title)),
    ...(engine ? engineHead(r, t, modelName) : scriptHead(r, t)),
    line('steps', `${n0(r.steps)} optimizer steps`),
    line('samples/s', rate),
    line('step time', `${ms(r.stepTime.steadyStateMeanMs, digits)} steady state; ${ms(r.stepTime.wallClockMeanMs, digits)} every step (warm-up${engine ? ' and evaluation' : ''} included)`),
    line('phases', phases),
    ...(engine ? [line('memory', engineMemoryText(t))] : scriptTail(t)),
    line('hardware', telemetryText(r)),
    line('saved', `${r.runDir} in the workspace (run.json, events.jsonl, ${engine ? 'checkpoint.safetensors' : 'telemetry.jsonl, output.log'})`),
  ].join('\n');
}
