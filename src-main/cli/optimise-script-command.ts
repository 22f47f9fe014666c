import { Command, InvalidArgumentError } from 'commander';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import { compileText, lossCheckText } from '../api/script-trial-words';
import { overrideCode } from '../api/script-override-code';
import type { ScriptOptimiseRequest, ScriptOptimiseResult, ScriptOverrides } from '../api/script-target';
import { SCRIPT_OVERRIDE_KEYS, ScriptOptimiseRequestSchema } from '../api/script-target';
import { EventHub } from '../core/event-hub';
import { ReportService } from '../core/reports/report-service';
import { readRunDetail } from '../core/run-reader';
import { ScriptJobs } from '../core/script/script-jobs';
import { optimiseScript } from '../core/script/script-optimise';
import type { Workspace } from '../core/workspace';
import { defaultWorkspaceDir, openWorkspace } from '../core/workspace';
import { collectEnv, collectOverride, scriptTarget, secondsArg } from './benchmark-script-command';
import { scriptBoundText } from '../core/knobs/script-bound';
import { reportWrittenLines } from './report-written';
import { choiceArg, intArg, ratioArg } from './train-inputs';
import { type ConfounderPolicy, ConfounderPolicySchema, type WizardObjective, WizardObjectiveSchema } from '../api/optimise';
import { conditionsSummary } from '../api/confounders';

const PRESETS = ['max-speed', 'balanced', 'reproducible'] as const;

function presetArg(value: string): (typeof PRESETS)[number] {
  if (!(PRESETS as readonly string[]).includes(value)) throw new InvalidArgumentError(`--preset must be one of ${PRESETS.join(', ')}, got ${JSON.stringify(value)}`);
  return value as (typeof PRESETS)[number];
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const x3 = (v: number) => `${v.toFixed(3)}x`;

/** Baseline, each trial with its decision, and the overrides to use as --set flags. */
export function formatScriptOptimise(r: ScriptOptimiseResult): string {
  const b = r.baseline;
  const setFlags = Object.entries(r.final.overrides).map(([k, v]) => `--set ${k}=${String(v)}`);
  return [
    `optimise   ${r.title}${r.objective === 'energy' ? '  (objective: samples per joule of GPU energy; the speedups below are of samples/J)' : ''}`,
    `loader     ${r.loader ? Object.entries(r.loader).map(([k, v]) => `${k}=${String(v)}`).join(', ') : 'no DataLoader seen'}`,
    `loss       ${lossCheckText(r.lossCheck, r.preset)}`,
    `baseline   ${n0(b.samplesPerSec.median)} samples/s (95% CI ${n0(b.samplesPerSec.low)}-${n0(b.samplesPerSec.high)}, noise floor ±${(100 * b.noiseFloor).toFixed(1)}%) on ${b.device}; data wait ${b.phasesPercent.data.toFixed(1)}% of the step`,
    `order      ${scriptBoundText(b)}`,
    'trials',
    ...(r.trials.length
      ? r.trials.flatMap((t) => [
          `  ${t.index}. ${t.change.label.padEnd(36)} ${t.decision.padEnd(13)} ${t.speedup ? `${x3(t.speedup.median)} [${x3(t.speedup.low)}, ${x3(t.speedup.high)}]` : t.error ?? ''}`,
          ...(t.compile ? [`     ${compileText(t.compile)}`] : []),
          ...(t.decision === 'confounded' ? [`     ${t.why}`] : []),
          ...(t.conditions && conditionsSummary(t.conditions) ? [`     conditions: ${conditionsSummary(t.conditions)}`] : []),
        ])
      : ['  none']),
    ...(r.skipped.length ? ['skipped', ...r.skipped.map((s) => `  - ${s.change.label}: ${s.why}`)] : []),
    `verdict    ${r.final.verdict}`,
    ...r.final.proposals.map((p) => `proposal   ${p}`),
    // A proposed change that beat the noise, with how to apply it: the flag, and the line for the script.
    ...r.trials
      .filter((t) => t.decision === 'proposed')
      .map((t) => {
        const value = t.change.to as string | number | boolean;
        return `apply      --set ${t.change.knob}=${String(value)} (in code: ${overrideCode({ [t.change.knob]: value }, { device: b.device })[0]})`;
      }),
    `use        ${setFlags.length ? setFlags.join(' ') : r.final.proposals.length ? 'the script as it is, or a proposal above' : 'the script as it is (no override)'}`,
    ...overrideCode(r.final.overrides, { device: b.device }).map((line, i) => `${i === 0 ? 'in code   ' : '          '} ${line}`),
    `saved      ${r.runDir} (${r.seconds.toFixed(0)} s)`,
  ].join('\n');
}

export interface OptimiseScriptFlags {
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
  set?: ScriptOverrides;
  cwd?: string;
  env?: Record<string, string>;
  json?: boolean;
  report?: boolean;
  progress: boolean;
  workspace: string;
  resume?: string;
}

/** A new wizard's request from the command and the flags, checked by the contract's schema. */
function newRequest(command: string[], flags: OptimiseScriptFlags): ScriptOptimiseRequest {
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
  });
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `bad option: ${formatIssues(parsed.error, 'optimise')}`);
  return parsed.data;
}

/** The request a stopped run was started with, to go on from it: its command and settings, as they were. */
async function resumedRequest(workspace: Workspace, runId: string): Promise<ScriptOptimiseRequest> {
  const detail = await readRunDetail(workspace, runId);
  const request = ScriptOptimiseRequestSchema.safeParse((detail.record as { config?: { request?: unknown } }).config?.request);
  if (detail.summary.kind !== 'optimise' || !request.success) throw new ApiError('E_BAD_INPUT', `run ${runId} is not a script optimisation (trainbench runs lists them): nothing to resume`);
  const { jobId: _jobId, ...asked } = request.data;
  return { ...asked, resumeFrom: runId };
}

/** `trainbench optimise-script`, and `optimise -- command...`: the wizard on a script target, new or resumed. */
export async function optimiseScriptAction(command: string[], flags: OptimiseScriptFlags): Promise<void> {
  const workspace = await openWorkspace(flags.workspace);
  if (flags.resume !== undefined && command.length > 0) {
    throw new ApiError('E_BAD_INPUT', `give either a command after '--' or --resume ${flags.resume} (which goes on with the saved run's command and settings), not both`);
  }
  if (flags.resume === undefined && command.length === 0) {
    throw new ApiError('E_BAD_INPUT', "no command to optimise: give it after '--' (trainbench optimise -- python3 train.py), or --resume <runId> to go on with a stopped one");
  }
  const request = flags.resume !== undefined ? await resumedRequest(workspace, flags.resume) : newRequest(command, flags);
  await runWizard(workspace, request, flags);
}

/**
 * `trainbench optimise --resume <id>` where the id names a script optimisation's run (an engine
 * wizard's id names none): goes on with it as optimise-script --resume does, and says whether it did.
 */
export async function resumeScriptOptimisation(runId: string, flags: OutputFlags & { workspace: string }): Promise<boolean> {
  let workspace: Workspace;
  let request: ScriptOptimiseRequest;
  try {
    workspace = await openWorkspace(flags.workspace);
    request = await resumedRequest(workspace, runId);
  } catch {
    return false;
  }
  await runWizard(workspace, request, flags);
  return true;
}

type OutputFlags = Pick<OptimiseScriptFlags, 'json' | 'report' | 'progress'>;

async function runWizard(workspace: Workspace, request: ScriptOptimiseRequest, flags: OutputFlags): Promise<void> {
  // Ctrl-C cancels as script.cancel does: the launch in flight is killed with its process group, and the
  // run is recorded cancelled with the trials finished so far.
  const jobs = new ScriptJobs();
  const onSigint = () => {
    process.stderr.write('\ncancelling the script optimisation...\n');
    jobs.cancelAll();
  };
  process.on('SIGINT', onSigint);
  try {
    const result = await optimiseScript(workspace, new EventHub(), request, {
      jobs,
      onProgress: (p) => {
        if (!flags.progress || flags.json) return;
        if (p.finishedTrial) process.stderr.write(`trial ${p.finishedTrial.index}: ${p.finishedTrial.change.label} -> ${p.finishedTrial.decision}\n`);
        else if (p.phase !== 'done') process.stderr.write(`${p.phase}${p.label ? ` (${p.label})` : ''}: ${p.repetition} of ${p.repetitions}\n`);
      },
    });
    process.stdout.write((flags.json ? JSON.stringify(result, null, 2) : formatScriptOptimise(result)) + '\n');
    if (flags.report) {
      const report = await new ReportService(workspace).generate({ runIds: [result.runId] });
      process.stderr.write(reportWrittenLines(workspace.root, report) + '\n');
    }
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export function optimiseScriptCommand(): Command {
  return new Command('optimise-script')
    .description('the optimisation wizard on your own training command: DataLoader and torch overrides one at a time, each kept only when it beats the noise (A/B/A/B)')
    .argument('[command...]', "the training command, after '--' (none with --resume)")
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
    .option('--set <key=value>', 'an override the script already runs with (the starting point), repeatable', collectOverride)
    .option('--cwd <dir>', 'working directory of the command')
    .option('--env <NAME=value>', 'environment variable for the command, repeatable', collectEnv)
    .option('--report', "write the result up as an ADR report (markdown + SVG charts) in the workspace's reports/")
    .option('--json', 'print the result as JSON')
    .option('--no-progress', 'no progress lines on stderr')
    .option('--resume <runId>', "go on with a cancelled, failed or killed script optimisation: its command, settings, baseline and finished trials are kept")
    .option('--workspace <dir>', 'workspace folder (saved there as a run of kind optimise)', defaultWorkspaceDir())
    .action(optimiseScriptAction);
}
