import { Command, InvalidArgumentError } from 'commander';

import type { BatchSearchResult, BatchTrial } from '../api/batch-size';
import { BatchSearchRequestSchema, DEFAULT_HEADROOM, THROUGHPUT_NOISE, TRIAL_OUTCOME_WORDS } from '../api/batch-size';
import { formatIssues } from '../api/format-issues';
import { newJobId } from '../api/ids';
import type { ScriptOverrides } from '../api/script-target';
import { ScriptBatchSearchRequestSchema } from '../api/script-target';
import { printable } from '../api/shell-word';
import { SearchCancelled } from '../core/batch-size/batch-size-service';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { ctrlCCancels } from './ctrl-c';
import { eitherTarget } from './either-target';
import { warnIfEmulated } from './emulation-note';
import { resolveModelAndData } from './model-and-data';
import { collectEnv, collectOverride, scriptTarget, secondsArg } from './target-flags';
import { trainOptions, type TrainFlags } from './train-command';
import { choiceArg, intArg, MODEL_FLAG_HELP, parseBytes, TRAIN_CHOICES } from './train-inputs';
import { jsonText, textOut } from './json-out';
import { UsageError } from './usage-error';

interface EngineSearchFlags extends Omit<TrainFlags, 'model' | 'data' | 'device'> {
  model: string;
  data: string;
  device: string;
  memoryLimit?: number;
  headroom: number;
  globalBatch?: number;
  steps: number;
  workspace: string;
}

/** The flags of `find-batch-size -- command...`, as the script side's options parse them. */
interface ScriptSearchFlags {
  set?: ScriptOverrides;
  cwd?: string;
  env?: Record<string, string>;
  startBatch?: number;
  maxBatch?: number;
  headroom: number;
  warmupSteps?: number;
  steps: number;
  timeout?: number;
  json?: boolean;
  progress: boolean;
  workspace: string;
}

function positiveInt(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${flag} must be a whole number of at least 1, got ${JSON.stringify(value)}`);
    return n;
  };
}

function fraction(value: string): number {
  const x = Number(value.endsWith('%') ? Number(value.slice(0, -1)) / 100 : value);
  if (!Number.isFinite(x) || x < 0 || x > 0.9) throw new InvalidArgumentError(`--headroom must be a fraction from 0 to 0.9 (or 0% to 90%), got ${JSON.stringify(value)}`);
  return x;
}

const n = (x: number) => Math.round(x).toLocaleString('en-US');
const mib = (b: number | null) => (b === null ? '-' : `${(b / 2 ** 20).toFixed(1)}`);

/** The trials as a table: batch, outcome, samples/s, the engine's predicted and the measured peak memory. */
export function formatTrials(trials: BatchTrial[]): string {
  const engine = trials.some((t) => t.target.kind === 'engine');
  // On the CPU the engine's accounting repeats its prediction: the OS's count of the process is the measurement there.
  const cpu = trials.some((t) => t.target.kind === 'engine' && t.target.processPeakRssBytes !== null);
  const rows = trials.map((t) => {
    const batch = t.accumulation > 1 ? `${n(t.batchSize)}x${t.accumulation}` : n(t.batchSize);
    const sps = t.samplesPerSec === null ? '-' : n(t.samplesPerSec);
    const note =
      t.outcome === 'ok' && !t.fits
        ? ' (over headroom)'
        : t.target.kind === 'engine' && !t.target.backAtBaseline
          ? ' (memory NOT back at baseline)'
          : t.outcome === 'ok' && t.samplesPerSec === null && t.message
            ? ` (${t.message})`
            : '';
    const predicted = t.target.kind === 'engine' ? `${mib(t.target.predicted.total).padStart(14)} ` : '';
    const measured = cpu ? (t.target.kind === 'engine' ? t.target.processPeakRssBytes : null) : t.peakBytes;
    const width = cpu ? 16 : 13;
    // In words, as the Batch size page and the ADR say them ("out of memory", not E_OOM).
    return `${batch.padStart(9)}  ${TRIAL_OUTCOME_WORDS[t.outcome].padEnd(13)} ${sps.padStart(10)} ${predicted}${mib(measured).padStart(width)} ${t.seconds.toFixed(1).padStart(7)}${note}`;
  });
  const header = engine
    ? `    batch  result         samples/s  predicted MiB  ${cpu ? 'process peak MiB' : 'measured MiB'}  time s`
    : '    batch  result         samples/s  CUDA peak MiB  time s';
  const note = cpu ? ["  process peak: the engine process's most resident memory during the trial, as the OS counts it (runtime and mapped data included); a batch fits when the engine's buffers, which the memory limit caps, leave the headroom free"] : [];
  return [header, ...rows, ...note].join('\n');
}

/** What the search filled and where it started: the engine's capacity, data and seed; a script's command and device. */
function searchedLines(r: BatchSearchResult): string[] {
  const t = r.target;
  if (t.kind === 'script') {
    return [`command  ${printable(r.title)}`, `device   ${r.device}${r.capacityBytes ? `: ${(r.capacityBytes / 2 ** 20).toFixed(0)} MiB, ${Math.round(r.headroom * 100)}% kept free` : ' (a batch fits when it trains)'}`];
  }
  return [
    `device   ${r.device}: ${mib(r.capacityBytes)} MiB (${t.capacitySource === 'memory-limit' ? '--memory-limit' : 'device memory'}), ${Math.round(r.headroom * 100)}% kept free -> ${mib(t.usableBytes)} MiB usable`,
    `data     ${t.data}; at most ${n(t.maxBatch)} samples per step`,
    `seed     batch ${n(t.seedBatch)} (largest power of two the memory model fits)`,
  ];
}

/** A search's result, either target: what it filled, its trials (an out-of-memory error is a data point), then what to use. */
export function formatSearch(r: BatchSearchResult): string {
  const global = r.target.kind === 'engine' ? r.target.globalBatch : null;
  return [
    ...searchedLines(r),
    formatTrials(r.trials),
    `largest  ${r.largestFitting === null ? 'none' : n(r.largestFitting)}; recommended ${r.recommended === null ? 'none' : n(r.recommended)}`,
    ...(global ? [`global   ${n(global.global)} = micro-batch ${n(global.microBatch)} x ${global.accumulation} accumulation`] : []),
    `verdict  ${r.verdict}`,
    `saved    ${r.runDir} (${r.trials.length} trial${r.trials.length === 1 ? '' : 's'} in ${r.seconds.toFixed(1)} s${r.cancelledAfterTrials === null ? '' : ', cancelled'})`,
  ].join('\n');
}

/** The search's answer on stdout; a search cancelled (Ctrl-C) after some trials prints theirs before its error. */
async function printSearch(search: Promise<BatchSearchResult>, json = false): Promise<void> {
  const print = (r: BatchSearchResult) => process.stdout.write((json ? jsonText(r, 2) : textOut(formatSearch(r))) + '\n');
  try {
    print(await search);
  } catch (err) {
    if (err instanceof SearchCancelled) print(err.partial);
    throw err;
  }
}

/** The search on an engine model: the trials grow the batch until the memory (or --memory-limit) runs out. */
async function findBatchSizeEngine(o: EngineSearchFlags): Promise<void> {
  const { spec, name, data } = await resolveModelAndData(o.model, o.data, o.workspace);
  const options = { ...trainOptions(name, { ...o, progress: false }), memoryLimitBytes: o.memoryLimit };
  const parsed = BatchSearchRequestSchema.safeParse({ spec, data, options, headroom: o.headroom, stepsPerTrial: o.steps, globalBatch: o.globalBatch });
  if (!parsed.success) throw new UsageError(`bad option: ${formatIssues(parsed.error, 'search')}`);
  const services = await createServices({ workspaceDir: o.workspace });
  await warnIfEmulated(services, parsed.data.options.device);
  const ctrlC = ctrlCCancels(services, 'search');
  try {
    const search = services.batchSize.search(parsed.data, {
      allowPathsOutsideWorkspace: true,
      onStart: (id) => ctrlC.jobIs(id),
      onTrial: (t) => {
        if (o.progress && !o.json) {
          const sps = t.samplesPerSec === null ? '' : `, ${n(t.samplesPerSec)} samples/s`;
          process.stderr.write(`trial ${t.index + 1}: batch ${n(t.batchSize)}${t.accumulation > 1 ? ` x ${t.accumulation}` : ''} -> ${TRIAL_OUTCOME_WORDS[t.outcome]}${sps}\n`);
        }
      },
    });
    await printSearch(search, o.json);
  } finally {
    ctrlC.off();
    await services.dispose();
  }
}

/** `find-batch-size [options] -- command...`: the search on a script target (its dataloader.batch_size varied). */
async function findBatchSizeScript(command: string[], flags: ScriptSearchFlags): Promise<void> {
  const parsed = ScriptBatchSearchRequestSchema.safeParse({
    target: scriptTarget(command, flags),
    overrides: flags.set ?? {},
    startBatch: flags.startBatch,
    maxBatch: flags.maxBatch,
    headroom: flags.headroom,
    warmupSteps: flags.warmupSteps,
    stepsPerTrial: flags.steps,
    timeoutSeconds: flags.timeout,
    jobId: newJobId(),
  });
  if (!parsed.success) throw new UsageError(`bad option: ${formatIssues(parsed.error, 'search')}`);
  const services = await createServices({ workspaceDir: flags.workspace });
  const ctrlC = ctrlCCancels(services, 'batch-size search', { jobId: parsed.data.jobId });
  try {
    const search = services.batchSize.search(parsed.data, {
      onTrial: (t) => {
        if (flags.progress && !flags.json) process.stderr.write(`trial ${t.index + 1}: batch ${n(t.batchSize)} -> ${t.outcome}${t.samplesPerSec === null ? '' : `, ${n(t.samplesPerSec)} samples/s`}\n`);
      },
    });
    await printSearch(search, flags.json);
  } finally {
    ctrlC.off();
    await services.dispose();
  }
}

/** The flags of the search both targets share: the headroom, the trial length, and where and how it reports. */
function sharedSearchOptions(cmd: Command): Command {
  return cmd
    .option('--headroom <fraction>', 'share of the memory the chosen batch leaves free (0.1 or 10%)', fraction, DEFAULT_HEADROOM)
    .option('--steps <n>', 'optimizer steps measured per trial', positiveInt('--steps'), 5)
    .option('--json', 'print the result as JSON (largestFitting, recommended, trials ...)')
    .option('--no-progress', 'no per-trial lines on stderr')
    .option('--workspace <dir>', 'workspace folder (the search is saved as a run)', defaultWorkspaceDir());
}

/** The script side's options: the shared ones, and those only a script target reads. */
function scriptSearchOptions(): Command {
  return sharedSearchOptions(new Command('find-batch-size -- command'))
    .option('--set <key=value>', 'an override every trial keeps (repeatable)', collectOverride)
    .option('--cwd <dir>', 'working directory of the command')
    .option('--env <NAME=value>', 'environment variable for the command (repeatable)', collectEnv)
    .option('--start-batch <n>', 'the first batch tried (doubling from there)', intArg('--start-batch', 1))
    .option('--max-batch <n>', 'the largest batch tried', intArg('--max-batch', 1))
    .option('--warmup-steps <n>', 'steps before each trial is timed', intArg('--warmup-steps', 0))
    .option('--timeout <seconds>', 'kill a trial (with all its processes) after this long', secondsArg);
}

export function findBatchSizeCommand(): Command {
  const cmd = new Command('find-batch-size')
    .description(
      `find the largest batch that fits with headroom and the smallest one within ${THROUGHPUT_NOISE * 100}% of the fastest (every trial is recorded), for an engine model or your own command after '--' (whose dataloader.batch_size is varied; an out-of-memory error is a data point)`,
    )
    .option('--model <name|spec.json>', MODEL_FLAG_HELP, 'mlp')
    .option('--data <source>', 'fashion-mnist, example-board, dataset:<train>[,<test>], or IDX files as for train', 'fashion-mnist')
    .option('--device <name>', 'cpu (needs --memory-limit), cuda:N, or auto', 'cpu')
    .option('--memory-limit <bytes>', "CPU: cap the engine's memory at this many bytes (1073741824, 1GiB, 512MiB) as a GPU's memory would", parseBytes)
    .option('--global-batch <n>', 'keep this global batch: find the micro-batch that fits and the accumulation that makes it up', positiveInt('--global-batch'))
    .option('--batch-size <n>', 'the batch the learning rate was tuned for (the LR advice scales from it)', positiveInt('--batch-size'))
    .option('--optimizer <kind>', TRAIN_CHOICES.optimizer.join(' or '), choiceArg('--optimizer', TRAIN_CHOICES.optimizer))
    .option('--threads <n>', 'CPU threads (0 = all cores)', (v) => Number(v));
  return eitherTarget(sharedSearchOptions(cmd), findBatchSizeEngine, { options: scriptSearchOptions(), run: findBatchSizeScript });
}
