import type { BuildProgress } from '../api/datasets';
import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { DataSource, TrainOptionsInput, TrainResult } from '../api/training';
import { TrainOptionsSchema } from '../api/training';
import { EXAMPLE_TEST_RECORDS, EXAMPLE_TRAIN_RECORDS } from '../core/datasets/example-board';
import { RECIPES } from '../api/recipes';
import { createServices } from '../core/services';
import { warnIfEmulated } from './emulation-note';
import { isBuiltinModel } from '../api/model-spec';
import { processMemoryText } from '../api/process-memory-words';
import { progressPrinter } from './progress-bar';
import { resolveData, resolveModel } from './train-inputs';

export interface TrainFlags {
  model: string;
  data: string;
  epochs?: number;
  batchSize?: number;
  lr?: number;
  optimizer?: 'sgd' | 'adamw';
  accumulation?: number;
  maxSteps?: number;
  sampleRatio?: number;
  clipNorm?: number;
  threads?: number;
  seed?: number;
  loaderWorkers?: number;
  prefetch?: number;
  device: string;
  precision?: 'fp32' | 'bf16' | 'fp16';
  phaseTiming?: 'default' | 'measure';
  cudaGraph?: boolean;
  gpuPrefetch?: number;
  json?: boolean;
  progress: boolean;
  workspace: string;
}

/** Recipe defaults for built-in models, then the flags the user gave. */
export function trainOptions(modelName: string, flags: TrainFlags): TrainOptionsInput {
  const recipe: TrainOptionsInput = isBuiltinModel(modelName) ? RECIPES[modelName] : {};
  const kind = flags.optimizer ?? recipe.optimizer?.kind ?? 'sgd';
  const optimizer = { ...(recipe.optimizer?.kind === kind ? recipe.optimizer : { kind }), ...(flags.lr !== undefined ? { lr: flags.lr } : {}) };
  const options: TrainOptionsInput = { ...recipe, optimizer, device: flags.device };
  const set = <K extends keyof TrainOptionsInput>(key: K, value: TrainOptionsInput[K] | undefined) => {
    if (value !== undefined) options[key] = value;
  };
  set('epochs', flags.epochs);
  set('batchSize', flags.batchSize);
  set('accumulation', flags.accumulation);
  set('maxSteps', flags.maxSteps);
  set('sampleRatio', flags.sampleRatio);
  set('clipNorm', flags.clipNorm);
  set('threads', flags.threads);
  set('seed', flags.seed);
  set('loaderWorkers', flags.loaderWorkers);
  set('prefetch', flags.prefetch);
  set('precision', flags.precision);
  set('phaseTiming', flags.phaseTiming);
  set('cudaGraph', flags.cudaGraph);
  set('gpuPrefetch', flags.gpuPrefetch);
  return options;
}

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

function summary(result: TrainResult, modelName: string): string {
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

/** What the silent time before the first step is spent on, for the progress line. */
function preparing(data: DataSource): string {
  if (data.kind === 'example-board') {
    const n = (EXAMPLE_TRAIN_RECORDS + EXAMPLE_TEST_RECORDS).toLocaleString('en-US');
    return `preparing the example dataset (the first run generates ${n} board positions with the teacher network, then caches them)`;
  }
  if (data.kind === 'dataset') return `opening dataset ${data.train}${data.test ? ` and ${data.test}` : ''}`;
  return 'preparing the data (the first run caches it)';
}

export async function trainCommand(flags: TrainFlags): Promise<void> {
  const { spec, name } = await resolveModel(flags.model, flags.workspace);
  const data = resolveData(flags.data);
  const parsed = TrainOptionsSchema.safeParse(trainOptions(name, flags));
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `bad training option: ${formatIssues(parsed.error, 'options')}`);

  const services = await createServices({ workspaceDir: flags.workspace });
  await warnIfEmulated(services, parsed.data.device);
  const progress = progressPrinter(process.stderr);
  let runId: string | null = null;
  let interrupted = false;
  const onSigint = () => {
    if (interrupted || !runId) process.exit(130);
    interrupted = true;
    process.stderr.write('\ncancelling (Ctrl-C again to quit at once)...\n');
    void services.training.cancel(runId);
  };
  process.on('SIGINT', onSigint);
  const showProgress = flags.progress && !flags.json;
  // Building the caches emits datasets.progress on the event hub before training starts.
  const offBuild = showProgress
    ? services.events.subscribe((name, payload) => {
        if (name !== 'datasets.progress') return;
        const p = payload as BuildProgress;
        progress.onBuild(p);
        if (p.phase === 'done') progress.waiting('preparing the run');
      })
    : () => undefined;
  if (showProgress) progress.waiting(preparing(data));
  try {
    const result = await services.training.run(
      { spec, data, options: parsed.data },
      {
        allowPathsOutsideWorkspace: true,
        onStart: (id) => (runId = id),
        onEvent: (e) => {
          if (flags.json) process.stdout.write(JSON.stringify(e) + '\n');
          else if (flags.progress) progress.onEvent(e);
        },
      },
    );
    progress.clear();
    if (flags.json) process.stdout.write(JSON.stringify({ type: 'result', ...result }) + '\n');
    else process.stdout.write(summary(result, name) + '\n');
  } finally {
    offBuild();
    progress.clear();
    process.off('SIGINT', onSigint);
    await services.dispose();
  }
}
