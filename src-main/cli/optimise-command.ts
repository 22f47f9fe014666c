import { Command, InvalidArgumentError } from 'commander';

import { collectorArg, joinNote } from './join-command';

import { formatIssues } from '../api/format-issues';
import { newJobId } from '../api/ids';
import type { ConfounderPolicy, OptimiseRequest, WizardObjective } from '../api/optimise';
import type { OptimiseResult } from '../api/optimise-result';
import { isEngineOptimise } from '../api/optimise-result';
import { ConfounderPolicySchema, OptimisePresetSchema, OptimiseRequestSchema, ReadFromSchema, WizardObjectiveSchema } from '../api/optimise';
import { pairsToDecide } from '../api/order-interval';
import type { ScriptOptimiseRequest, ScriptOverrides } from '../api/script-target';
import { SCRIPT_OVERRIDE_KEYS, ScriptOptimiseRequestSchema } from '../api/script-target';
import type { WizardOptions } from '../core/optimise/optimise-service';
import type { Services } from '../core/services';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { ctrlCCancels } from './ctrl-c';
import { eitherTarget } from './either-target';
import { warnIfEmulated } from './emulation-note';
import { formatOptimise, progressLine, repeatNote } from './optimise-format';
import { reportWrittenLines } from './report-written';
import { collectEnv, collectOverride, scriptTarget, secondsArg } from './target-flags';
import { choiceArg, intArg, measuredTarget, type MeasuredTargetFlags, measuredTargetOptions, parseBytes, ratioArg, secondsRangeArg } from './train-inputs';
import { jsonText, textOut } from './json-out';
import { UsageError } from './usage-error';

interface OptimiseFlags extends MeasuredTargetFlags {
  readFrom: 'cache' | 'source';
  warmupSteps: number;
  steps: number;
  minWindow: number;
  memoryLimit?: number;
  repeat: number;
  preset: 'max-speed' | 'reproducible' | 'balanced';
  maxTrials: number;
  allowRecipeChanges?: boolean;
  lossTolerance?: number;
  confounders: ConfounderPolicy;
  objective: WizardObjective;
  batchSearch: boolean;
  resume?: string;
  yes?: string | boolean;
  report?: boolean;
  json?: boolean;
  progress: boolean;
  workspace: string;
}

/** The flags of `optimise -- command...`, as the script side's options parse them. */
interface OptimiseScriptFlags {
  preset: (typeof PRESETS)[number];
  repeat: number;
  steps: number;
  warmupSteps: number;
  maxTrials: number;
  allowRecipeChanges?: boolean;
  seed: number;
  lossTolerance?: number;
  confounders: ConfounderPolicy;
  objective: WizardObjective;
  only?: string[];
  timeout: number;
  collector?: { host: string; port: number };
  set?: ScriptOverrides;
  cwd?: string;
  env?: Record<string, string>;
  json?: boolean;
  report?: boolean;
  progress: boolean;
  workspace: string;
  resume?: string;
}

type OutputFlags = Pick<OptimiseScriptFlags, 'json' | 'report' | 'progress'>;

const PRESETS = ['max-speed', 'balanced', 'reproducible'] as const;

function presetArg(value: string): (typeof PRESETS)[number] {
  if (!(PRESETS as readonly string[]).includes(value)) throw new InvalidArgumentError(`--preset must be one of ${PRESETS.join(', ')}, got ${JSON.stringify(value)}`);
  return value as (typeof PRESETS)[number];
}

/** An engine wizard's request from the flags, checked by the contract's schema. */
async function buildRequest(flags: OptimiseFlags, jobId: string): Promise<OptimiseRequest> {
  const { spec, data, options } = await measuredTarget(flags);
  const parsed = OptimiseRequestSchema.safeParse({
    target: { spec, data, options: flags.memoryLimit !== undefined ? { ...options, memoryLimitBytes: flags.memoryLimit } : options, readFrom: flags.readFrom },
    preset: flags.preset,
    repeat: flags.repeat,
    steps: flags.steps,
    minWindowSeconds: flags.minWindow,
    warmupSteps: flags.warmupSteps,
    maxTrials: flags.maxTrials,
    allowRecipeChanges: flags.allowRecipeChanges === true,
    batchSearch: flags.batchSearch,
    ...(flags.lossTolerance !== undefined ? { lossTolerance: flags.lossTolerance } : {}),
    confounders: flags.confounders,
    objective: flags.objective,
    jobId,
  });
  if (!parsed.success) throw new UsageError(`bad optimise option: ${formatIssues(parsed.error, 'request')}`);
  return parsed.data;
}

/** A script wizard's request from the command and the flags, checked by the contract's schema. */
function newScriptRequest(command: string[], flags: OptimiseScriptFlags): ScriptOptimiseRequest {
  const parsed = ScriptOptimiseRequestSchema.safeParse({
    target: scriptTarget(command, flags),
    overrides: flags.set ?? {},
    preset: flags.preset,
    repeat: flags.repeat,
    steps: flags.steps,
    warmupSteps: flags.warmupSteps,
    maxTrials: flags.maxTrials,
    allowRecipeChanges: flags.allowRecipeChanges ?? false,
    seed: flags.seed,
    ...(flags.only ? { only: flags.only } : {}),
    ...(flags.lossTolerance !== undefined ? { lossTolerance: flags.lossTolerance } : {}),
    confounders: flags.confounders,
    objective: flags.objective,
    timeoutSeconds: flags.timeout,
    ...(flags.collector ? { collector: flags.collector } : {}),
  });
  if (!parsed.success) throw new UsageError(`bad option: ${formatIssues(parsed.error, 'optimise')}`);
  return parsed.data;
}

/** `optimise` without a command: the engine's wizard, new, or either target's resumed by --resume <id>. */
async function optimise(flags: OptimiseFlags): Promise<void> {
  // One id scheme, as the app's wizard and every run have (a UI walk found 'optimise-…' on the CLI beside the UI's ids).
  const request = flags.resume === undefined ? await buildRequest(flags, newJobId()) : null;
  const services = await createServices({ workspaceDir: flags.workspace });
  try {
    if (request) {
      await warnIfEmulated(services, request.target.options.device);
      sayRepeat(request.repeat, flags);
      await runWizard(services, 'engine', false, false, (options) => services.optimise.start(request, options), flags);
      return;
    }
    // --resume takes either target's id: an engine wizard's, or a script optimisation's run (which goes on with that script).
    const id = flags.resume!;
    const saved = await services.optimise.state(id);
    // The user's own --resume: a script wizard goes on with the command its run file names, once --yes says so
    // (without it the command is shown, as check --against does: the workspace may come from another rig).
    const resume = (options: WizardOptions) => services.optimise.resume(id, { ...options, commandConsent: flags.yes ?? false });
    const engine = saved !== null && 'runIds' in saved;
    await runWizard(services, engine ? 'engine' : 'script', !engine, true, resume, flags);
  } finally {
    await services.dispose();
  }
}

/** `optimise -- command...`: the wizard on a script target (a stopped one goes on with --resume <runId> alone). */
async function optimiseScript(command: string[], flags: OptimiseScriptFlags): Promise<void> {
  if (flags.resume !== undefined) {
    throw new UsageError(`give either a command after '--' or --resume ${flags.resume} (which goes on with the saved run's command and settings), not both`);
  }
  const request = newScriptRequest(command, flags);
  const services = await createServices({ workspaceDir: flags.workspace });
  try {
    sayRepeat(request.repeat, flags);
    await runWizard(services, 'script', true, false, (options) => services.optimise.start(request, options), flags);
  } finally {
    await services.dispose();
  }
}

/** Before a start with fewer pairs than a decision needs: the trials will only lean, said before the minutes are spent. */
function sayRepeat(repeat: number, flags: OutputFlags): void {
  if (flags.progress && repeat < pairsToDecide()) process.stderr.write(`${repeatNote(repeat)}\n`);
}

/**
 * Either target's wizard, new or resumed: a progress bar on stderr (redrawn in place on a terminal, every line
 * kept on a pipe), Ctrl-C cancels as jobs.cancel does (a script's launch in flight is killed with its process
 * group; the run keeps the trials finished so far), the result on stdout.
 */
async function runWizard(
  services: Services,
  target: 'engine' | 'script',
  /**
   * A script's resume shows its command, and the settings the saved state goes on with, for a --yes with their
   * fingerprint (which changes with every trial saved, so it is not printed here).
   */
  resumeShowsCommand: boolean,
  resumed: boolean, run: (options: WizardOptions) => Promise<OptimiseResult>, flags: OutputFlags): Promise<void> {
  const tty = process.stderr.isTTY === true;
  let drawn = false;
  const say = (line: string, transient = false) => {
    if (!flags.progress) return;
    if (tty && drawn) process.stderr.write('\r\x1b[2K');
    // A resumed wizard's labels and reasons come from its saved state: escaped like the result.
    const shown = textOut(line);
    process.stderr.write(tty && transient ? shown : `${shown}\n`);
    drawn = tty && transient;
  };
  const ctrlC = ctrlCCancels(services, target === 'script' ? 'script optimisation' : 'optimisation');
  try {
    let last = '';
    const announce = (id: string) => say(`optimisation ${id}${resumed ? ' resumed from its saved state' : ''} (if stopped, continue it with: trainbench optimise --resume ${id}${resumeShowsCommand ? ', which shows the command and the --yes that runs it' : ''})`);
    // A script's resume may yet be refused (its command shown for consent): "resumed" is said once it goes on.
    let unannounced: string | null = null;
    const result = await run({
      allowPathsOutsideWorkspace: true,
      onStart: (id) => {
        ctrlC.jobIs(id);
        if (resumed && target === 'script') unannounced = id;
        else announce(id);
      },
      onJoin: (code) => {
        say(joinNote(code).trimEnd());
        if (!flags.progress) process.stderr.write(joinNote(code));
      },
      onProgress: (p) => {
        if (unannounced !== null) announce(unannounced);
        unannounced = null;
        const line = progressLine(p);
        if (line !== last) say(line, p.finishedTrial === null && p.repetitions > 0);
        last = line;
      },
    });
    if (drawn) process.stderr.write('\n');
    drawn = false;
    process.stdout.write((flags.json ? jsonText(result, 2) : textOut(formatOptimise(result))) + '\n');
    if (flags.report) {
      // The wizard's run first (its attempts are the report), then the batch search it ran, so both are written up.
      const search = isEngineOptimise(result) ? result.target.batchSearch?.runId : undefined;
      const report = await services.reports.generate({ runIds: [result.runId, ...(search ? [search] : [])] });
      process.stderr.write(reportWrittenLines(services.workspace.root, report) + '\n');
    }
  } finally {
    if (drawn) process.stderr.write('\n');
    ctrlC.off();
  }
}

/** The script side's options: their defaults and help where a shared flag reads otherwise (--steps 30, --max-trials 8). */
function scriptOptions(): Command {
  return new Command('optimise')
    .option('--preset <name>', 'max-speed (numerics changes too), balanced or reproducible', presetArg, 'balanced')
    .option('--repeat <n>', 'launches of the baseline and of each side of a trial', intArg('--repeat', 2), 5)
    .option('--steps <n>', 'measured steps per launch', intArg('--steps', 1), 30)
    .option('--warmup-steps <n>', 'steps before the clock starts, per launch', intArg('--warmup-steps', 0), 5)
    .option('--max-trials <n>', 'most changes tried', intArg('--max-trials', 0), 8)
    .option('--allow-recipe-changes', 'keep a faster batch size (it changes the training recipe) instead of only proposing it')
    .option('--only <keys>', `try only these overrides, comma-separated (${SCRIPT_OVERRIDE_KEYS.join(', ')})`, (v: string) => v.split(',').map((k) => k.trim()).filter(Boolean))
    .option('--seed <n>', 'seed for torch, random and numpy in every launch, unless the script seeds itself (the loss guard compares launches with the same seed)', intArg('--seed', 0), 0)
    .option('--loss-tolerance <r>', 'largest relative change of the mean loss over the measured steps a kept change may make', ratioArg('--loss-tolerance'))
    .option('--confounders <policy>', 'when the two sides of a pair saw different conditions (other processes\' CPU load, a GPU slowing down): remeasure the pair (twice at most) and leave a trial undecided if they still differ, or record them only (a shared machine)', choiceArg('--confounders', ConfounderPolicySchema.options), 'remeasure')
    .option('--objective <what>', 'throughput (samples/s, the default) or energy: samples per joule of GPU energy, from the GPUs\' power over each repetition (a CUDA target where nvidia-smi reports power)', choiceArg('--objective', WizardObjectiveSchema.options), 'throughput')
    .option('--timeout <seconds>', 'kill a launch (with all its processes) after this long', secondsArg, 600)
    .option('--collector <host[:port]>', "a job across machines: this machine's address the other nodes reach (they follow every launch with the code printed once)", collectorArg)
    .option('--set <key=value>', 'an override the script already runs with (the starting point), repeatable', collectOverride)
    .option('--cwd <dir>', 'working directory of the command')
    .option('--env <NAME=value>', 'environment variable for the command, repeatable', collectEnv)
    .option('--report', "write the result up as an ADR report (markdown + SVG charts) in the workspace's reports/")
    .option('--json', 'print the result as JSON')
    .option('--no-progress', 'no progress lines on stderr')
    .option('--resume <runId>', "go on with a cancelled, failed or killed script optimisation: its command, settings, baseline and finished trials are kept")
    .option('--workspace <dir>', 'workspace folder (saved there as a run of kind optimise)', defaultWorkspaceDir());
}

export function optimiseCommand(): Command {
  const cmd = new Command('optimise').description(
    "the optimisation wizard, on an engine model or on your own command after '--': a baseline, a diagnosis, the physical limits, then one change at a time kept only when its speedup CI beats the noise",
  );
  measuredTargetOptions(cmd, '')
    .option('--read-from <where>', 'cache, or source: read the records from the source files in place (the uncached path)', choiceArg('--read-from', ReadFromSchema.options), 'cache')
    .option('--warmup-steps <n>', 'optimizer steps before the clock starts, in every repetition', intArg('--warmup-steps', 0), 5)
    .option('--steps <n>', 'optimizer steps measured per repetition', intArg('--steps', 1), 50)
    .option('--min-window <seconds>', "the shortest a repetition's measured steps may take: when the baseline's steps take less, the wizard raises --steps to about this and measures the baseline again (0: as --steps says)", secondsRangeArg('--min-window', 0, 60), 0)
    .option('--repeat <n>', 'repetitions of the baseline and pairs of every trial (the widest interval of n pairs covers 1 - 2 x 0.5^n: 93.8% at 5, 95% from 6; 9 tolerates one disturbed pair)', intArg('--repeat', 2), 5)
    .option('--seed <n>', 'seed for initialisation and shuffling (the loss guard compares runs with the same seed)', intArg('--seed', 0))
    .option('--preset <name>', OptimisePresetSchema.options.join(', '), choiceArg('--preset', OptimisePresetSchema.options), 'balanced')
    .option('--max-trials <n>', 'most changes tried', intArg('--max-trials', 0), 12)
    .option('--allow-recipe-changes', 'keep a faster batch size too (it changes the training recipe; otherwise it is only proposed)')
    .option('--memory-limit <bytes>', "CPU: cap the engine's memory at this many bytes (1GiB, 512MiB) as a GPU's memory would, so the batch-size search has memory to fill", parseBytes)
    .option('--no-batch-search', 'skip the batch-size search (CUDA, or a CPU memory limit): the batch-size candidate is then twice the batch')
    .option('--loss-tolerance <r>', 'largest relative change of the mean loss a kept change may make', ratioArg('--loss-tolerance'))
    .option('--confounders <policy>', 'when the two sides of a pair saw different conditions (other processes\' CPU load, a GPU slowing down): remeasure the pair (twice at most) and leave a trial undecided if they still differ, or record them only (a shared machine)', choiceArg('--confounders', ConfounderPolicySchema.options), 'remeasure')
    .option('--objective <what>', 'throughput (samples/s, the default) or energy: samples per joule of GPU energy, from the GPUs\' power over each repetition (a CUDA target where nvidia-smi reports power)', choiceArg('--objective', WizardObjectiveSchema.options), 'throughput')
    .option('--resume <id>', "continue a cancelled or interrupted optimisation from its saved state (the other target flags are ignored); a script optimisation's run id goes on with that script, once --yes confirms it")
    .option('--yes [fingerprint]', "with --resume of a script optimisation: run the command its run file names, as the fingerprint shown beside it (otherwise the command and its fingerprint are shown and nothing runs)")
    .option('--report', 'write the result up as an ADR report (markdown + SVG charts) in the workspace\'s reports/')
    .option('--json', 'print the result as JSON')
    .option('--no-progress', 'no progress lines on stderr')
    .option('--workspace <dir>', 'workspace folder (the wizard is saved there as a run and a state file)', defaultWorkspaceDir());
  return eitherTarget(cmd, optimise, { options: scriptOptions(), run: optimiseScript });
}
