import { Command } from 'commander';

import { collectorArg, joinNote } from './join-command';

import type { BenchmarkProgress } from '../api/benchmark';
import { TrainingBenchmarkRequestSchema } from '../api/benchmark';
import { formatIssues } from '../api/format-issues';
import type { ScriptOverrides } from '../api/script-target';
import { SCRIPT_OVERRIDE_KEYS, ScriptBenchmarkRequestSchema } from '../api/script-target';
import { printable } from '../api/shell-word';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { ctrlCCancels } from './ctrl-c';
import { formatBenchmark } from './benchmark-format';
import { eitherTarget } from './either-target';
import { warnIfEmulated } from './emulation-note';
import { collectEnv, collectOverride, scriptTarget, secondsArg } from './target-flags';
import { intArg, measuredTarget, type MeasuredTargetFlags, measuredTargetOptions } from './train-inputs';
import { jsonText, textOut } from './json-out';
import { UsageError } from './usage-error';

interface BenchmarkFlags extends MeasuredTargetFlags {
  warmupSteps: number;
  steps: number;
  repeat: number;
  json?: boolean;
  progress: boolean;
  workspace: string;
}

/** The flags of `benchmark-training -- command...`, as the script side's options parse them. */
export interface BenchmarkScriptFlags {
  warmupSteps: number;
  steps?: number;
  repeat: number;
  timeout: number;
  set?: ScriptOverrides;
  cwd?: string;
  env?: Record<string, string>;
  json?: boolean;
  progress: boolean;
  output: boolean;
  workspace: string;
  collector?: { host: string; port: number };
  oneNode?: boolean;
  collectives?: boolean;
  collectivesPerBucket?: boolean;
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');

function progressLine(p: BenchmarkProgress): string {
  if (p.phase === 'preparing') return 'preparing the data (the first run caches it)';
  if (p.phase === 'repetition-done') return `repetition ${p.repetition} of ${p.repetitions}: ${n0(p.samplesPerSec ?? 0)} samples/s`;
  return `repetition ${p.repetition} of ${p.repetitions}: step ${p.step} of ${p.totalSteps} (${p.phase})`;
}

/** `benchmark-training` on an engine model. */
async function benchmarkTraining(flags: BenchmarkFlags): Promise<void> {
  const { spec, data, options } = await measuredTarget(flags);
  const parsed = TrainingBenchmarkRequestSchema.safeParse({ spec, data, options, warmupSteps: flags.warmupSteps, steps: flags.steps, repeat: flags.repeat });
  if (!parsed.success) throw new UsageError(`bad benchmark option: ${formatIssues(parsed.error, 'request')}`);

  const services = await createServices({ workspaceDir: flags.workspace });
  const emulated = await warnIfEmulated(services, parsed.data.options.device);
  const ctrlC = ctrlCCancels(services, 'benchmark');
  let last = '';
  try {
    const result = await services.benchmarks.run(parsed.data, {
      allowPathsOutsideWorkspace: true,
      onProgress: (p) => {
        ctrlC.jobIs(p.jobId);
        const line = progressLine(p);
        if (flags.progress && !flags.json && line !== last) process.stderr.write(`${line}\n`);
        last = line;
      },
    });
    process.stdout.write((flags.json ? jsonText(result, 2) : textOut(formatBenchmark(result) + (emulated ? `\nwarning    ${emulated}` : ''))) + '\n');
  } finally {
    ctrlC.off();
    await services.dispose();
  }
}

/** `benchmark-training -- command...`: the benchmark on a script target. */
async function benchmarkScript(command: string[], flags: BenchmarkScriptFlags): Promise<void> {
  const parsed = ScriptBenchmarkRequestSchema.safeParse({
    target: scriptTarget(command, flags),
    overrides: flags.set ?? {},
    warmupSteps: flags.warmupSteps,
    steps: flags.steps,
    repeat: flags.repeat,
    timeoutSeconds: flags.timeout,
    // A job across machines is measured for its straggler: what --collector is for.
    collectives: flags.collectives === true || flags.collectivesPerBucket === true || flags.collector !== undefined,
    collectivesPerBucket: flags.collectivesPerBucket === true,
    ...(flags.collector ? { collector: flags.collector } : {}),
    ...(flags.oneNode ? { oneNode: true } : {}),
  });
  if (!parsed.success) throw new UsageError(`bad benchmark option: ${formatIssues(parsed.error, 'request')}`);
  const services = await createServices({ workspaceDir: flags.workspace });
  const ctrlC = ctrlCCancels(services, 'script benchmark');
  // A job of several ranks: each rank said once per launch, as its first step arrives (a node joining shows at once).
  const heard = new Set<string>();
  try {
    const result = await services.benchmarks.run(parsed.data, {
      onProgress: (p) => {
        ctrlC.jobIs(p.jobId);
        for (const r of p.ranks ?? []) {
          if (!flags.progress || flags.json || heard.has(`${p.repetition}:${r.rank}`)) continue;
          heard.add(`${p.repetition}:${r.rank}`);
          const node = [r.nodeRank !== null ? `node ${r.nodeRank}` : null, r.node === null ? null : printable(r.node)].filter(Boolean).join(', ');
          process.stderr.write(`launch ${p.repetition}: rank ${r.rank}${node ? ` (${node})` : ''} reporting, at step ${r.step}\n`);
        }
        if (flags.progress && !flags.json && p.phase === 'repetition-done') process.stderr.write(`launch ${p.repetition} of ${p.repetitions}: ${n0(p.samplesPerSec ?? 0)} samples/s\n`);
      },
      onOutput: (stream, line, rep) => {
        if (flags.output) process.stderr.write(`[${rep}${stream === 'stderr' ? ' err' : ''}] ${line}\n`);
      },
      onJoin: (code) => process.stderr.write(joinNote(code)),
    });
    process.stdout.write((flags.json ? jsonText(result, 2) : textOut(formatBenchmark(result))) + '\n');
  } finally {
    ctrlC.off();
    await services.dispose();
  }
}

/** The script side's options: their defaults and help where a shared flag reads otherwise (--steps: to the script's end). */
function scriptOptions(): Command {
  return new Command('benchmark-training')
    .option('--warmup-steps <n>', 'optimizer steps before the clock starts', intArg('--warmup-steps', 0), 5)
    .option('--steps <n>', 'measured steps, after which the probe ends the script (default: it runs to its own end)', intArg('--steps', 1))
    .option('--repeat <n>', 'launches, each a fresh process (3 or more for a meaningful CI)', intArg('--repeat', 1), 3)
    .option('--timeout <seconds>', 'kill a launch (with all its processes) after this long', secondsArg, 600)
    .option('--set <key=value>', `override, repeatable: ${SCRIPT_OVERRIDE_KEYS.join(', ')}`, collectOverride)
    .option('--cwd <dir>', 'working directory of the command (default: the current one)')
    .option('--env <NAME=value>', 'environment variable for the command, repeatable', collectEnv)
    .option('--json', 'print the result as JSON')
    .option('--no-progress', 'no progress lines on stderr')
    .option('--no-output', "do not echo the script's output on stderr (it is saved in the run either way)")
    .option('--workspace <dir>', 'workspace folder (the benchmark is saved there as a run)', defaultWorkspaceDir())
    .option('--collectives', "time every rank at DDP's all-reduces once a step and name the straggler (read from DDP's own stamps: ~0.2-0.3 ms a step on a 2-core CPU; implied by --collector)")
    .option('--collectives-per-bucket', "time each gradient bucket's all-reduce instead, and the bus bandwidth (a Python hook: it costs small steps up to a sixth of their time; torch 2)")
    .option('--one-node', 'a torchrun job of several nodes: afterwards, launch it once more on this node alone (--nnodes 1) and say the scaling efficiency')
    .option('--collector <host[:port]>', "a job across machines: this machine's address the other nodes reach (they follow every launch with the code printed once)", collectorArg);
}

export function benchmarkTrainingCommand(): Command {
  const cmd = new Command('benchmark-training').description(
    "time the real training step, of an engine model or of your own command after '--': step times (steady state and wall clock), phases, samples/s with a CI, memory, GPU telemetry, findings",
  );
  measuredTargetOptions(cmd, ' (sets the predicted epoch time)')
    .option('--warmup-steps <n>', 'optimizer steps before the steady-state clock starts', intArg('--warmup-steps', 0), 5)
    .option('--steps <n>', 'optimizer steps measured after the warm-up', intArg('--steps', 1), 50)
    .option('--repeat <n>', 'repetitions, each a fresh trainer (3 or more for a meaningful CI)', intArg('--repeat', 1), 3)
    .option('--seed <n>', 'seed for initialisation and shuffling', intArg('--seed', 0))
    .option('--json', 'print the result as JSON')
    .option('--no-progress', 'no progress lines on stderr')
    .option('--workspace <dir>', 'workspace folder (the benchmark is saved there as a run)', defaultWorkspaceDir());
  return eitherTarget(cmd, benchmarkTraining, { options: scriptOptions(), run: benchmarkScript });
}
