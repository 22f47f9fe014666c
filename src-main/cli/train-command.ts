import { Command, InvalidArgumentError } from 'commander';

import type { BuildProgress } from '../api/datasets';
import { formatIssues } from '../api/format-issues';
import { newJobId } from '../api/ids';
import { isBuiltinModel } from '../api/model-spec';
import { RECIPES } from '../api/recipes';
import { MAX_SCRIPT_RUN_SECONDS, ScriptTrainRequestSchema } from '../api/script-target';
import type { ScriptOverrides } from '../api/script-target';
import { SCRIPT_OVERRIDE_KEYS } from '../api/script-target';
import type { DataSource, TrainOptionsInput } from '../api/training';
import { TrainOptionsSchema } from '../api/training';
import { EXAMPLE_TEST_RECORDS, EXAMPLE_TRAIN_RECORDS } from '../core/datasets/example-board';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { ctrlCCancels } from './ctrl-c';
import { eitherTarget } from './either-target';
import { warnIfEmulated } from './emulation-note';
import { resolveModelAndData } from './model-and-data';
import { chooseTestSet } from './test-set';
import { progressPrinter } from './progress-bar';
import { collectEnv, collectOverride, scriptTarget, secondsArg } from './target-flags';
import { formatTrainRun } from './train-format';
import { choiceArg, intArg, MODEL_FLAG_HELP, TRAIN_CHOICES } from './train-inputs';
import { jsonText, textOut } from './json-out';
import { UsageError } from './usage-error';

export interface TrainFlags {
  model: string;
  data: string;
  /** A workspace dataset to test on, or 'none'; for --data dataset:<id> the dataset's held-out split otherwise. */
  test?: string;
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

/** The flags of `train -- command...`, as the script side's options parse them. */
interface TrainScriptFlags {
  maxSteps?: number;
  warmupSteps: number;
  timeout: number;
  set?: ScriptOverrides;
  cwd?: string;
  env?: Record<string, string>;
  json?: boolean;
  progress: boolean;
  output: boolean;
  workspace: string;
}

/** Progress lines on stderr at most this often for a script: the service's ~10/s is for charts, not a terminal. */
const PRINT_INTERVAL_MS = 2000;

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');

function numberArg(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n)) throw new InvalidArgumentError(`${name} must be a number, got ${JSON.stringify(value)}`);
    return n;
  };
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

/** What the silent time before the first step is spent on, for the progress line. */
function preparing(data: DataSource): string {
  if (data.kind === 'example-board') {
    const n = (EXAMPLE_TRAIN_RECORDS + EXAMPLE_TEST_RECORDS).toLocaleString('en-US');
    return `preparing the example dataset (the first run generates ${n} board positions with the teacher network, then caches them)`;
  }
  if (data.kind === 'dataset') return `opening dataset ${data.train}${data.test ? ` and ${data.test}` : ''}`;
  return 'preparing the data (the first run caches it)';
}

/** `train` on an engine model: trained to the end, progress on stderr, the run saved in the workspace. */
async function trainEngine(flags: TrainFlags): Promise<void> {
  const resolved = await resolveModelAndData(flags.model, flags.data, flags.workspace);
  const { spec, name } = resolved;
  const { data, note } = await chooseTestSet(resolved.data, flags.test, flags.workspace);
  if (note) process.stderr.write(`${note}\n`);
  const parsed = TrainOptionsSchema.safeParse(trainOptions(name, flags));
  if (!parsed.success) throw new UsageError(`bad training option: ${formatIssues(parsed.error, 'options')}`);

  const services = await createServices({ workspaceDir: flags.workspace });
  await warnIfEmulated(services, parsed.data.device);
  const progress = progressPrinter(process.stderr);
  const ctrlC = ctrlCCancels(services, 'run', { quitOnSecond: true });
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
        onStart: (id) => ctrlC.jobIs(id),
        onEvent: (e) => {
          if (flags.json) process.stdout.write(jsonText(e) + '\n');
          else if (flags.progress) progress.onEvent(e);
        },
      },
    );
    progress.clear();
    if (flags.json) process.stdout.write(jsonText({ type: 'result', ...result }) + '\n');
    else process.stdout.write(textOut(formatTrainRun(result, name)) + '\n');
  } finally {
    offBuild();
    progress.clear();
    ctrlC.off();
    await services.dispose();
  }
}

/** `train -- command...`: a whole run of a script target, recorded as a run like an engine model's. */
async function trainScript(command: string[], flags: TrainScriptFlags): Promise<void> {
  const parsed = ScriptTrainRequestSchema.safeParse({
    target: scriptTarget(command, flags),
    overrides: flags.set ?? {},
    maxSteps: flags.maxSteps,
    warmupSteps: flags.warmupSteps,
    timeoutSeconds: flags.timeout,
    jobId: newJobId(),
  });
  if (!parsed.success) throw new UsageError(`bad train option: ${formatIssues(parsed.error, 'request')}`);
  const services = await createServices({ workspaceDir: flags.workspace });
  const ctrlC = ctrlCCancels(services, 'run', { jobId: parsed.data.jobId });
  let printed = 0;
  try {
    const result = await services.training.run(parsed.data, {
      onProgress: (p) => {
        if (!flags.progress || flags.json || Date.now() - printed < PRINT_INTERVAL_MS) return;
        printed = Date.now();
        const rate = p.samplesPerSec === null ? '' : `, ${n0(p.samplesPerSec)} samples/s`;
        const loss = p.loss === null ? '' : `, loss ${p.loss.toPrecision(4)}`;
        process.stderr.write(`step ${n0(p.step)}${p.maxSteps ? ` of ${n0(p.maxSteps)}` : ''}${rate}${loss}\n`);
      },
      onOutput: (stream, line) => {
        if (flags.output) process.stderr.write(`${stream === 'stderr' ? '[err] ' : ''}${line}\n`);
      },
    });
    process.stdout.write((flags.json ? jsonText(result, 2) : textOut(formatTrainRun(result))) + '\n');
  } finally {
    ctrlC.off();
    await services.dispose();
  }
}

/** The script side's options: their defaults and help where a shared flag reads otherwise (--max-steps: to the script's end). */
function scriptOptions(): Command {
  return new Command('train')
    .option('--max-steps <n>', 'end the script after this many optimizer steps (default: it trains to its own end)', intArg('--max-steps', 1))
    .option('--warmup-steps <n>', 'first steps left out of the steady-state figures', intArg('--warmup-steps', 0), 5)
    .option('--timeout <seconds>', 'kill the run (with all its processes) after this long', secondsArg, 7 * 24 * 3600)
    .option('--set <key=value>', `override, repeatable: ${SCRIPT_OVERRIDE_KEYS.join(', ')}`, collectOverride)
    .option('--cwd <dir>', 'working directory of the command (default: the current one)')
    .option('--env <NAME=value>', 'environment variable for the command, repeatable', collectEnv)
    .option('--json', 'print the result as JSON')
    .option('--no-progress', 'no progress lines on stderr')
    .option('--no-output', "do not echo the script's output on stderr (it is saved in the run either way)")
    .option('--workspace <dir>', 'workspace folder (the run is saved there)', defaultWorkspaceDir());
}

export function trainCommand(): Command {
  const train = new Command('train')
    .description("train a model and print its test accuracy (progress on stderr); or train with your own command after '--', recorded as a run")
    .option('--model <name|spec.json>', MODEL_FLAG_HELP, 'mlp')
    .option('--data <source>', 'fashion-mnist, example-board, dataset:<train>[,<test>], a folder of IDX files, or train-images,train-labels[,test-images,test-labels]', 'fashion-mnist')
    .option('--test <dataset|none>', "the workspace dataset to test on with --data dataset:<name> (default: the split held out when it was imported, if any), or 'none'")
    .option('--loader-workers <n>', 'threads gathering batches ahead of the step', intArg('--loader-workers', 0))
    .option('--prefetch <n>', 'batches prepared ahead', intArg('--prefetch', 1))
    .option('--epochs <n>', 'epochs', intArg('--epochs', 1))
    .option('--batch-size <n>', 'samples per micro-batch', intArg('--batch-size', 1))
    .option('--accumulation <n>', 'micro-batches per optimizer step', intArg('--accumulation', 1))
    .option('--optimizer <kind>', TRAIN_CHOICES.optimizer.join(' or '), choiceArg('--optimizer', TRAIN_CHOICES.optimizer))
    .option('--lr <rate>', 'learning rate', numberArg('--lr'))
    .option('--max-steps <n>', 'stop after this many optimizer steps', intArg('--max-steps', 0))
    .option('--sample-ratio <r>', 'fraction of the training set used per epoch', numberArg('--sample-ratio'))
    .option('--clip-norm <x>', 'clip gradients to this global norm', numberArg('--clip-norm'))
    .option('--threads <n>', 'CPU threads (0 = all cores)', intArg('--threads', 0))
    .option('--seed <n>', 'seed for initialisation, shuffling and dropout', intArg('--seed', 0))
    .option('--device <name>', 'cpu, cuda:N, or auto (the first GPU when there is one)', 'cpu')
    .option('--precision <p>', 'fp32, or mixed precision bf16 / fp16 (CUDA)', choiceArg('--precision', TRAIN_CHOICES.precision))
    .option('--phase-timing <mode>', "CUDA phase timing: 'default' (events, no stalls) or 'measure' (synchronise per phase)", choiceArg('--phase-timing', TRAIN_CHOICES.phaseTiming))
    .option('--cuda-graph', 'CUDA: capture the step once and replay it')
    .option('--gpu-prefetch <n>', 'CUDA: batches copied ahead to the device', intArg('--gpu-prefetch', 1))
    .option('--json', 'print events and the result as JSON lines on stdout')
    .option('--no-progress', 'no progress output')
    .option('--workspace <dir>', 'workspace folder (runs are saved there)', defaultWorkspaceDir())
    .addHelpText('after', `\nWith a command after '--', the longest --timeout is ${MAX_SCRIPT_RUN_SECONDS} s. Ctrl-C cancels: the run is recorded as cancelled.`);
  return eitherTarget(train, trainEngine, { options: scriptOptions(), run: trainScript });
}
