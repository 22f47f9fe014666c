import { readFileSync } from 'node:fs';
import path from 'node:path';

import { Command, InvalidArgumentError } from 'commander';

import type { Devices } from '../api/devices';
import { ApiError } from '../api/errors';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace';
import { packageRoot } from '../engine/package-root';
import { DEFAULT_PORT } from '../server/serve';
import { formatDevices } from './format-devices';
import { serveCommand } from './serve-command';
import { benchmarkTrainingCommand } from './benchmark-training-command';
import { optimiseCommand } from './optimise-command';
import { cacheCommand } from './cache-command';
import { findBatchSizeCommand } from './find-batch-size-command';
import { loaderBenchCommand } from './loader-bench-command';
import { modelsCommand } from './models-command';
import { monitorCommand } from './monitor-command';
import { runsCommand } from './runs-command';
import { trainCommand } from './train-command';
import { reportCommand } from './report-command';
import { traceCommand } from './trace-command';
import { checkCommand } from './check-command';
import { benchmarkScriptCommand } from './benchmark-script-command';
import { optimiseScriptCommand } from './optimise-script-command';
import { trainScript, trainScriptCommand } from './train-script-command';
import { eitherTarget, noteArgv } from './either-target';
import { choiceArg, intArg, TRAIN_CHOICES } from './train-inputs';

function numberArg(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n)) throw new InvalidArgumentError(`${name} must be a number, got ${JSON.stringify(value)}`);
    return n;
  };
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new InvalidArgumentError(`port must be an integer from 0 to 65535, got ${JSON.stringify(value)}`);
  }
  return port;
}

async function devicesCommand(opts: { json?: boolean; workspace: string }): Promise<void> {
  const services = await createServices({ workspaceDir: opts.workspace });
  try {
    const devices = (await services.router.dispatch('engine.devices', {})) as Devices;
    process.stdout.write((opts.json ? JSON.stringify(devices, null, 2) : formatDevices(devices)) + '\n');
  } finally {
    await services.dispose();
  }
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** "trainbench cache build": the words a person types to reach `cmd`. */
function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** The one line after an error: where to read the usage, instead of the whole help. */
export function helpPointer(cmd: Command): string {
  return `Run '${commandPath(cmd)} --help' for the usage.`;
}

/** Every command, also those built elsewhere and added, points to its own --help after an error. */
function pointErrorsToHelp(cmd: Command): void {
  cmd.showHelpAfterError(helpPointer(cmd));
  cmd.commands.forEach(pointErrorsToHelp);
}

export function buildProgram(): Command {
  const program = new Command('trainbench')
    .description('Make GPU training fast, and show why')
    .version(`trainbench ${packageVersion()}`, '-V, --version', 'print the version');

  program
    .command('devices')
    .description('list the CPU and CUDA devices the engine can use')
    .option('--json', 'print JSON instead of text')
    .option('--workspace <dir>', 'workspace folder', defaultWorkspaceDir())
    .action(devicesCommand);

  program
    .command('serve')
    .description('serve the workbench UI and API to a browser (for headless rigs, over an SSH tunnel)')
    .option('--port <n>', 'port to listen on (0 picks a free one)', parsePort, DEFAULT_PORT)
    .option('--host <address>', 'address to bind', '127.0.0.1')
    .option('--workspace <dir>', 'workspace folder', defaultWorkspaceDir())
    .option('--allow-scripts', 'let the workbench start your own training commands (script targets): code execution for whoever holds the token')
    .action(serveCommand);

  const train = new Command('train')
    .description("train a model and print its test accuracy (progress on stderr); or train with your own command after '--', recorded as a run")
    .option('--model <name|spec.json>', 'built-in model (mlp, cnn, bottleneck_resnet) or a JSON spec file (a relative path is also looked for in the workspace: models/<name>.json)', 'mlp')
    .option('--data <source>', 'fashion-mnist, example-board, dataset:<train>[,<test>], a folder of IDX files, or train-images,train-labels[,test-images,test-labels]', 'fashion-mnist')
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
    .option('--workspace <dir>', 'workspace folder (runs are saved there)', defaultWorkspaceDir());
  program.addCommand(eitherTarget(train, trainCommand, { options: trainScriptCommand(), alias: 'train-script', run: trainScript }));

  program.addCommand(cacheCommand());
  program.addCommand(loaderBenchCommand());
  program.addCommand(findBatchSizeCommand());
  program.addCommand(benchmarkTrainingCommand());
  program.addCommand(monitorCommand());
  program.addCommand(runsCommand());
  program.addCommand(modelsCommand());
  program.addCommand(optimiseCommand());
  program.addCommand(reportCommand());
  program.addCommand(traceCommand());
  program.addCommand(checkCommand());
  program.addCommand(benchmarkScriptCommand());
  program.addCommand(optimiseScriptCommand());
  program.addCommand(trainScriptCommand());
  pointErrorsToHelp(program);

  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  let running: Command = program;
  program.hook('preAction', (_program, action) => {
    running = action;
  });
  noteArgv(argv);
  try {
    await program.parseAsync(argv);
  } catch (err) {
    const code = err instanceof ApiError ? `${err.code}: ` : '';
    // Bad input is the user's to fix, so say where the usage is; other failures are not about usage.
    const pointer = err instanceof ApiError && err.code === 'E_BAD_INPUT' ? `${helpPointer(running)}\n` : '';
    process.stderr.write(`trainbench: ${code}${(err as Error).message}\n${pointer}`);
    process.exitCode = 1;
  }
}
