import path from 'node:path';

import { Command, InvalidArgumentError } from 'commander';

import { PHASE_NAMES_WITH_OTHER } from '../api/benchmark';
import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import { energyText, floorRows, SCRIPT_ENERGY_WINDOW, utilisationText } from '../api/utilisation-words';
import type { ScriptBenchmarkResult, ScriptOverrides, ScriptTarget } from '../api/script-target';
import { parseOverride, SCRIPT_OVERRIDE_KEYS, ScriptBenchmarkRequestSchema } from '../api/script-target';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace';
import { intArg } from './train-inputs';

export function secondsArg(value: string): number {
  const n = Number(value);
  if (!(n >= 1)) throw new InvalidArgumentError(`--timeout must be a number of seconds >= 1, got ${JSON.stringify(value)}`);
  return n;
}

/** Collects repeated `--set key=value`, refusing an unknown key (with the known ones) or a bad value at once. */
export function collectOverride(text: string, previous: ScriptOverrides = {}): ScriptOverrides {
  try {
    const { key, value } = parseOverride(text);
    return { ...previous, [key]: value };
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** Collects repeated `--env NAME=value`. */
export function collectEnv(text: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`--env takes NAME=value, got ${JSON.stringify(text)}`);
  return { ...previous, [text.slice(0, eq)]: text.slice(eq + 1) };
}

/** The command after `--`, run in --cwd (default: here). */
export function scriptTarget(command: string[], flags: { cwd?: string; env?: Record<string, string> }): ScriptTarget {
  if (command.length === 0) throw new ApiError('E_BAD_INPUT', "no command to run: give it after '--', e.g. trainbench benchmark-training -- python3 train.py");
  return { kind: 'script', command, cwd: path.resolve(flags.cwd ?? process.cwd()), env: flags.env ?? {} };
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const mb = (b: number | null) => (b === null ? 'n/a' : `${(b / 1e6).toFixed(1)} MB`);

function processTreeLine(r: ScriptBenchmarkResult): string[] {
  const t = r.repetitions[r.repetitions.length - 1].processTree;
  if (!t) return [];
  return [`processes  ${t.processes} at most (ranks, DataLoader workers); CPU ${t.cpuPercent === null ? 'n/a' : `${t.cpuPercent.toFixed(0)}% of one core`} over the measured steps; peak RSS ${mb(t.peakRssBytes)} (the last launch's whole tree)`];
}

/** The model FLOPs the probe counted (an estimate) and the utilisation they give, or why there is none. */
function scriptFlopsLines(r: ScriptBenchmarkResult): string[] {
  if (!r.flops) return [];
  if (r.flops.forwardPerSample === null || !r.utilisation) return [`utilisation not estimated: ${r.flops.method}`];
  return [
    `utilisation ${utilisationText(r.utilisation)}`,
    `           an estimate: ${n0(r.flops.forwardPerSample)} forward FLOPs per sample counted by ${r.flops.method}, over ${r.flops.layers} layer(s), three times for training`,
  ];
}

/** The compute, copy and data floors beside the measured step, as optimise's limits section gives the engine's. */
function floorLines(r: ScriptBenchmarkResult): string[] {
  if (!r.floors) return [];
  return [
    `floors     per step and rank, how far the ${r.floors.stepMs.toFixed(3)} ms step is from each, and how it was measured`,
    ...floorRows(r.floors).map((f) => `  ${f.name.padEnd(8)} ${f.stepMs.padStart(10)}  ${f.over.padEnd(12)}  ${f.derivation}`),
    `  ${r.floors.summary}`,
  ];
}

/** The result as a person reads it: figures, ranks, where the step goes, what was applied, findings. */
export function formatScriptBenchmark(r: ScriptBenchmarkResult): string {
  const ci = r.samplesPerSecCi;
  const lines = [
    `benchmark  ${r.title}`,
    `setup      ${r.device}, batch ${r.batchSize ?? 'unknown'} per rank, ${r.worldSize} rank(s); ${r.warmupSteps} warm-up + ${r.steps} measured steps, ${r.repeat} launch(es)`,
    '',
    'launch  samples/s   steady ms   wall-clock ms  ended',
    ...r.repetitions.map((x) => `${String(x.repetition).padStart(6)} ${n0(x.samplesPerSec).padStart(10)} ${x.steadyStateMeanMs.toFixed(3).padStart(11)} ${x.wallClockMeanMs.toFixed(3).padStart(15)}  ${x.ended === 'steps' ? 'stopped by the probe' : 'by itself'}`),
    '',
    `samples/s  ${n0(ci.median)} median${r.worldSize > 1 ? ' (sum over ranks)' : ''}, 95% CI [${n0(ci.low)}, ${n0(ci.high)}] (bootstrap over ${r.repeat} launches)`,
    `step time  ${r.stepTime.steadyStateMeanMs.toFixed(3)} ms steady state; ${r.stepTime.wallClockMeanMs.toFixed(3)} ms wall-clock mean (warm-up included)`,
    `data wait  ${r.dataWait.msPerStep.toFixed(3)} ms per step, ${r.dataWait.percent.toFixed(1)}% of the step (rank ${r.dataWait.rank}, the slowest)`,
    ...(r.worldSize > 1
      ? ['ranks      rank  samples/s  steps  data wait', ...r.ranks.map((k) => `           ${String(k.rank).padStart(4)} ${n0(k.samplesPerSec).padStart(10)} ${String(k.measuredSteps).padStart(6)}  ${k.dataWaitPercent.toFixed(1)}%`)]
      : []),
    'phases     ms per step over the measured steps, and share of the step',
    ...PHASE_NAMES_WITH_OTHER.map((p) => `  ${p.padEnd(10)} ${r.phasesMs[p].toFixed(3).padStart(10)} ms ${r.phasesPercent[p].toFixed(1).padStart(6)}%`),
    `           ${r.phaseNote}`,
    `memory     ${r.memory.device}: CUDA peak ${mb(r.memory.cudaPeakBytes)}${r.memory.cudaTotalBytes ? ` of ${mb(r.memory.cudaTotalBytes)}` : ''}; host peak RSS ${mb(r.memory.hostPeakRssBytes)}`,
    ...processTreeLine(r),
    ...scriptFlopsLines(r),
    ...floorLines(r),
    ...(energyText(r) ? [`energy     ${energyText(r)}`, ...(r.energy ? [`           ${SCRIPT_ENERGY_WINDOW}`] : [])] : []),
    `applied    ${r.applied.length ? [...new Set(r.applied.map((a) => `${a.key}=${a.value} (${a.where})`))].join('; ') : 'no overrides'}`,
    'findings',
    ...(r.findings.length ? r.findings.map((f) => `  ${f.severity === 'warning' ? '!' : '-'} ${f.text}`) : ['  none: no threshold was crossed']),
    `saved      ${r.runDir} in the workspace (run.json, events.jsonl, output-rep*.log, telemetry-rep*.jsonl)`,
  ];
  return lines.join('\n');
}

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
}

/** `trainbench benchmark-script -- command...`, and `benchmark-training -- command...`: the benchmark on a script target. */
export async function benchmarkScript(command: string[], flags: BenchmarkScriptFlags): Promise<void> {
  const parsed = ScriptBenchmarkRequestSchema.safeParse({
    target: scriptTarget(command, flags),
    overrides: flags.set ?? {},
    warmupSteps: flags.warmupSteps,
    steps: flags.steps,
    repeat: flags.repeat,
    timeoutSeconds: flags.timeout,
  });
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `bad benchmark option: ${formatIssues(parsed.error, 'request')}`);
  const services = await createServices({ workspaceDir: flags.workspace });
  let jobId: string | null = null;
  const onSigint = () => {
    if (!jobId) process.exit(130);
    process.stderr.write('\ncancelling the script benchmark...\n');
    services.scripts.cancel(jobId);
  };
  process.on('SIGINT', onSigint);
  try {
    const result = await services.scripts.run(parsed.data, {
      onProgress: (p) => {
        jobId = p.jobId;
        if (flags.progress && !flags.json && p.phase === 'repetition-done') process.stderr.write(`launch ${p.repetition} of ${p.repetitions}: ${n0(p.samplesPerSec ?? 0)} samples/s\n`);
      },
      onOutput: (stream, line, rep) => {
        if (flags.output) process.stderr.write(`[${rep}${stream === 'stderr' ? ' err' : ''}] ${line}\n`);
      },
    });
    process.stdout.write((flags.json ? JSON.stringify(result, null, 2) : formatScriptBenchmark(result)) + '\n');
  } finally {
    process.off('SIGINT', onSigint);
    await services.dispose();
  }
}

export function benchmarkScriptCommand(): Command {
  return new Command('benchmark-script')
    .description("benchmark your own PyTorch training command, unchanged: steps, batch, samples/s, data wait, phases, memory (Trainbench's probe is injected through PYTHONPATH)")
    .argument('<command...>', "the training command, after '--' (python3 train.py ..., torchrun ..., poetry run ..., a shell script)")
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
    .action(benchmarkScript);
}
