import { Command } from 'commander';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { ScriptTrainResult } from '../api/script-run';
import { MAX_SCRIPT_RUN_SECONDS, ScriptTrainRequestSchema } from '../api/script-run';
import type { ScriptOverrides } from '../api/script-target';
import { SCRIPT_OVERRIDE_KEYS } from '../api/script-target';
import { newRunId } from '../core/run-store';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace';
import { collectEnv, collectOverride, scriptTarget, secondsArg } from './benchmark-script-command';
import { intArg } from './train-inputs';

/** Progress lines on stderr at most this often: the service's ~10/s is for charts, not a terminal. */
const PRINT_INTERVAL_MS = 2000;

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const mb = (b: number | null) => (b === null ? 'n/a' : `${(b / 1e6).toFixed(1)} MB`);

/** The run as a person reads it. */
export function formatScriptRun(r: ScriptTrainResult): string {
  const ended = r.ended === 'maxSteps' ? 'stopped by Trainbench at --max-steps' : 'ended on its own';
  return [
    `run        ${r.title}`,
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

export interface TrainScriptFlags {
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

/** `trainbench train-script -- command...`, and `train -- command...`: a whole run of a script target. */
export async function trainScript(command: string[], flags: TrainScriptFlags): Promise<void> {
  const parsed = ScriptTrainRequestSchema.safeParse({
    target: scriptTarget(command, flags),
    overrides: flags.set ?? {},
    maxSteps: flags.maxSteps,
    warmupSteps: flags.warmupSteps,
    timeoutSeconds: flags.timeout,
    runId: newRunId(),
  });
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `bad train-script option: ${formatIssues(parsed.error, 'request')}`);
  const runId = parsed.data.runId!;
  const services = await createServices({ workspaceDir: flags.workspace });
  const onSigint = () => {
    process.stderr.write('\ncancelling the run...\n');
    services.scriptJobs.cancel(runId);
  };
  process.on('SIGINT', onSigint);
  let printed = 0;
  try {
    const result = await services.scriptRuns.run(parsed.data, {
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
    process.stdout.write((flags.json ? JSON.stringify(result, null, 2) : formatScriptRun(result)) + '\n');
  } finally {
    process.off('SIGINT', onSigint);
    await services.dispose();
  }
}

export function trainScriptCommand(): Command {
  return new Command('train-script')
    .description("train with your own PyTorch command, unchanged, recorded as a run like `train` (steps, samples/s, data wait, loss, telemetry, output)")
    .argument('<command...>', "the training command, after '--' (python3 train.py ..., torchrun ..., poetry run ..., a shell script)")
    .option('--max-steps <n>', 'end the script after this many optimizer steps (default: it trains to its own end)', intArg('--max-steps', 1))
    .option('--warmup-steps <n>', 'first steps left out of the steady-state figures', intArg('--warmup-steps', 0), 5)
    .option('--timeout <seconds>', 'kill the run (with all its processes) after this long', secondsArg, 7 * 24 * 3600)
    .option('--set <key=value>', `override, repeatable: ${SCRIPT_OVERRIDE_KEYS.join(', ')}`, collectOverride)
    .option('--cwd <dir>', 'working directory of the command (default: the current one)')
    .option('--env <NAME=value>', 'environment variable for the command, repeatable', collectEnv)
    .option('--json', 'print the result as JSON')
    .option('--no-progress', 'no progress lines on stderr')
    .option('--no-output', "do not echo the script's output on stderr (it is saved in the run either way)")
    .option('--workspace <dir>', 'workspace folder (the run is saved there)', defaultWorkspaceDir())
    .addHelpText('after', `\nThe longest --timeout is ${MAX_SCRIPT_RUN_SECONDS} s. Ctrl-C cancels: the run is recorded as cancelled.`)
    .action(trainScript);
}
