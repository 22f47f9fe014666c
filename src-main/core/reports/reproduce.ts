// The exact `trainbench` command that measures a run again, rebuilt from the config its run.json stored:
// an engine run's flags, or a script run's with its command after '--'.
import { BUILTIN_MODELS, isBuiltinModel, ModelSpecSchema } from '../../api/model-spec';
import { RECIPES } from '../../api/recipes';
import { shellWord } from '../../api/shell-word';
import { TrainOptionsSchema } from '../../api/training';
import type { ReportRun, ScriptReportRun } from './report-runs';
import { overridesOf, targetOf } from './report-runs';

export interface ReproduceCommand {
  command: string;
  /** Settings of the run the command's flags cannot set, and what else the reader must do (a spec file to save). */
  caveats: string[];
}


type Config = Record<string, unknown> & { spec?: { family?: string }; data?: Record<string, unknown>; options?: Record<string, unknown> };

/** `--model mlp` when the spec is the built-in one, else a spec file saved from run.json. */
function modelFlag(config: Config, runId: string, caveats: string[]): string {
  const family = config.spec?.family ?? 'mlp';
  if (isBuiltinModel(family)) {
    const builtin = ModelSpecSchema.parse(BUILTIN_MODELS[family]);
    if (JSON.stringify(builtin) === JSON.stringify(config.spec)) return family;
  }
  caveats.push(`the model is not a built-in one: save \`config.spec\` of runs/${runId}/run.json as spec.json`);
  return 'spec.json';
}

function dataFlag(data: Record<string, unknown> | undefined): string {
  if (!data) return 'fashion-mnist';
  if (data.kind === 'fashion-mnist') return typeof data.dir === 'string' ? data.dir : 'fashion-mnist';
  if (data.kind === 'example-board') return 'example-board';
  if (data.kind === 'dataset') return `dataset:${String(data.train)}${data.test ? `,${String(data.test)}` : ''}`;
  const pair = (p: unknown) => {
    const x = p as { images: string; labels: string } | undefined;
    return x ? [x.images, x.labels] : [];
  };
  return [...pair(data.train), ...pair(data.test)].join(',');
}

/** Settings present in the run that none of the command's flags sets, when they differ from what the command would use. */
function unflagged(options: Record<string, unknown>, expected: Record<string, unknown>, keys: readonly string[], caveats: string[]): void {
  for (const key of keys) {
    if (options[key] === undefined) continue;
    if (JSON.stringify(options[key]) !== JSON.stringify(expected[key])) {
      caveats.push(`${key} was ${JSON.stringify(options[key])}, which this command has no flag for (the app sets it)`);
    }
  }
}

export function reproduceCommand(run: ReportRun, workspaceFlag = '<workspace>'): ReproduceCommand {
  const stored = run.record.config as Config & { request?: Record<string, unknown> & { target?: Config } };
  // An optimise run keeps the target (spec, data, options) inside its request.
  const config: Config = run.kind === 'optimise' ? { ...(stored.request ?? {}), ...(stored.request?.target ?? {}) } : stored;
  const o = (config.options ?? {}) as Record<string, unknown>;
  const caveats: string[] = [];
  if (run.kind === 'loader-benchmark') {
    const c = stored as Record<string, unknown>;
    const list = (x: unknown) => (Array.isArray(x) ? x.join(',') : String(x));
    const flags: [string, unknown][] = [
      ['--dataset', c.dataset],
      ['--batch-size', c.batchSize],
      ['--workers', list(c.workers)],
      ['--prefetch', list(c.prefetch)],
      ['--sample-ratio', c.sampleRatio],
      ['--seconds', c.maxSeconds],
      ['--device', c.device],
    ];
    if (String(c.device).startsWith('cuda')) flags.push(['--gpu-prefetch', c.gpuPrefetch]);
    if (c.uncached === false) flags.push(['--no-uncached', true]);
    const text = flags.filter(([, v]) => v !== undefined).map(([f, v]) => (v === true ? f : `${f} ${shellWord(String(v))}`));
    return { command: ['trainbench', 'benchmark-dataloader', ...text, '--workspace', workspaceFlag].join(' '), caveats };
  }
  const args: [string, unknown][] = [
    ['--model', modelFlag(config, run.id, caveats)],
    ['--data', dataFlag(config.data)],
    ['--device', o.device],
  ];
  const family = config.spec?.family ?? '';
  const recipe = TrainOptionsSchema.parse(isBuiltinModel(family) ? RECIPES[family] : {});
  const defaults = TrainOptionsSchema.parse({});
  let sub: string;
  if (run.kind === 'benchmark') {
    sub = 'benchmark-training';
    args.push(['--precision', o.precision], ['--batch-size', o.batchSize], ['--accumulation', o.accumulation], ['--loader-workers', o.loaderWorkers], ['--prefetch', o.prefetch]);
    if (String(o.device).startsWith('cuda')) args.push(['--gpu-prefetch', o.gpuPrefetch]);
    args.push(['--sample-ratio', o.sampleRatio], ['--warmup-steps', config.warmupSteps], ['--steps', config.steps], ['--repeat', config.repeat], ['--seed', o.seed], ['--threads', o.threads]);
    unflagged(o, { ...defaults, optimizer: undefined }, ['phaseTiming', 'cudaGraph', 'shuffle', 'clipNorm', 'optimizer', 'schedule'], caveats);
  } else if (run.kind === 'batch-search') {
    sub = 'find-batch-size';
    const optimizer = (o.optimizer as { kind?: string } | undefined)?.kind;
    if (Number(o.memoryLimitBytes) > 0) args.push(['--memory-limit', o.memoryLimitBytes]);
    args.push(['--headroom', config.headroom], ['--steps', config.stepsPerTrial], ['--batch-size', o.batchSize]);
    if (config.globalBatch !== undefined) args.push(['--global-batch', config.globalBatch]);
    if (optimizer) args.push(['--optimizer', optimizer]);
    args.push(['--threads', o.threads]);
    unflagged(o, recipe, ['precision', 'loaderWorkers', 'prefetch', 'sampleRatio', 'seed', 'phaseTiming', 'cudaGraph', 'schedule'], caveats);
  } else if (run.kind === 'optimise') {
    sub = 'optimise';
    args.push(['--read-from', config.readFrom], ['--precision', o.precision], ['--batch-size', o.batchSize], ['--accumulation', o.accumulation], ['--loader-workers', o.loaderWorkers], ['--prefetch', o.prefetch]);
    if (String(o.device).startsWith('cuda')) args.push(['--gpu-prefetch', o.gpuPrefetch]);
    args.push(['--sample-ratio', o.sampleRatio], ['--warmup-steps', config.warmupSteps], ['--steps', config.steps], ['--repeat', config.repeat], ['--seed', o.seed], ['--threads', o.threads]);
    args.push(['--preset', config.preset], ['--max-trials', config.maxTrials], ['--loss-tolerance', config.lossTolerance]);
    // How it measured and judged too (a UI walk's reproduce command ran a batch search the original had skipped).
    args.push(['--min-window', config.minWindowSeconds], ['--confounders', config.confounders], ['--objective', config.objective]);
    if (config.batchSearch === false) args.push(['--no-batch-search', true]);
    if (Number(o.memoryLimitBytes) > 0) args.push(['--memory-limit', o.memoryLimitBytes]);
    if (config.allowRecipeChanges === true) args.push(['--allow-recipe-changes', true]);
    unflagged(o, { ...defaults, optimizer: undefined }, ['phaseTiming', 'cudaGraph', 'shuffle', 'clipNorm', 'optimizer', 'schedule'], caveats);
  } else {
    sub = 'train';
    const optimizer = o.optimizer as { kind?: string; lr?: number } | undefined;
    args.push(['--epochs', o.epochs], ['--batch-size', o.batchSize], ['--accumulation', o.accumulation]);
    if (optimizer?.kind) args.push(['--optimizer', optimizer.kind], ['--lr', optimizer.lr]);
    if (Number(o.maxSteps) > 0) args.push(['--max-steps', o.maxSteps]);
    args.push(['--sample-ratio', o.sampleRatio], ['--loader-workers', o.loaderWorkers], ['--prefetch', o.prefetch], ['--precision', o.precision]);
    if (Number(o.clipNorm) > 0) args.push(['--clip-norm', o.clipNorm]);
    if (String(o.device).startsWith('cuda')) args.push(['--phase-timing', o.phaseTiming], ['--gpu-prefetch', o.gpuPrefetch]);
    if (o.cudaGraph === true) args.push(['--cuda-graph', true]);
    args.push(['--seed', o.seed], ['--threads', o.threads]);
    unflagged(o, recipe, ['schedule', 'shuffle', 'memoryLimitBytes', 'evalBatchSize'], caveats);
  }
  const flags = args
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([flag, v]) => (v === true ? flag : `${flag} ${shellWord(String(v))}`));
  return { command: ['trainbench', sub, ...flags, '--workspace', workspaceFlag].join(' '), caveats };
}

/** The command that measures each kind again: the engine's own, with the script after '--'. */
const SUBCOMMANDS: Record<ScriptReportRun['kind'], string> = {
  'script-benchmark': 'benchmark-training',
  'script-batch-search': 'find-batch-size',
  'script-optimise': 'optimise',
  'script-train': 'train',
};

/** Values of variables that look like credentials stay out of a document people share. */
export const SECRET = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;
export const envValue = (name: string, value: string) => (SECRET.test(name) ? '<redacted>' : value);
const scriptConfig = (run: ScriptReportRun) => run.record.config as Record<string, unknown> & { request?: Record<string, unknown> };

/** The trainbench command that measures the run again, from its run.json. */
export function scriptReproduceCommand(run: ScriptReportRun, workspaceFlag = '<workspace>'): string {
  const t = targetOf(run);
  const c = scriptConfig(run);
  const r = run.kind === 'script-optimise' ? (c.request ?? {}) : c;
  const args: [string, unknown][] = [];
  if (run.kind === 'script-batch-search') args.push(['--start-batch', r.startBatch], ['--max-batch', r.maxBatch], ['--warmup-steps', r.warmupSteps], ['--steps', r.stepsPerTrial]);
  else if (run.kind === 'script-train') args.push(['--max-steps', r.maxSteps], ['--warmup-steps', r.warmupSteps]);
  else args.push(['--warmup-steps', r.warmupSteps], ['--steps', r.steps], ['--repeat', r.repeat]);
  if (run.kind === 'script-optimise') {
    args.push(['--preset', r.preset], ['--max-trials', r.maxTrials]);
    if (r.allowRecipeChanges === true) args.push(['--allow-recipe-changes', true]);
  }
  args.push(['--timeout', r.timeoutSeconds]);
  // A job across machines: the other nodes join again with the code the new measurement prints (--one-node: the
  // scaling efficiency against this node alone, measured again too).
  const collector = r.collector as { host?: unknown; port?: unknown } | undefined;
  if (r.collectivesPerBucket === true) args.push(['--collectives-per-bucket', true]);
  else if (r.collectives === true && !collector) args.push(['--collectives', true]);
  if (r.oneNode === true) args.push(['--one-node', true]);
  if (collector && typeof collector.host === 'string') args.push(['--collector', collector.port ? `${collector.host.includes(":") ? `[${collector.host}]` : collector.host}:${String(collector.port)}` : collector.host]);
  for (const [k, v] of Object.entries(overridesOf(run))) args.push(['--set', `${k}=${String(v)}`]);
  for (const [k, v] of Object.entries(t.env)) args.push(['--env', `${k}=${envValue(k, v)}`]);
  args.push(['--cwd', t.cwd]);
  const flags = args.filter(([, v]) => v !== undefined && v !== null).map(([flag, v]) => (v === true ? flag : `${flag} ${shellWord(String(v))}`));
  return ['trainbench', SUBCOMMANDS[run.kind], ...flags, '--workspace', workspaceFlag, '--', ...t.command.map(shellWord)].join(' ');
}
