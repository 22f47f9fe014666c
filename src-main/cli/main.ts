import { readFileSync } from 'node:fs';
import path from 'node:path';

import { Command, InvalidArgumentError } from 'commander';

import type { Devices } from '../api/devices';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
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
import { joinCommand } from './join-command';
import { noteArgv } from './either-target';
import { errorOut } from './error-out';
import { jsonText, textOut } from './json-out';
import { UsageError } from './usage-error';

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
    process.stdout.write((opts.json ? jsonText(devices, 2) : textOut(formatDevices(devices))) + '\n');
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
    .option('--collector-host <address>', "a job across machines: the address of this machine other nodes reach, which requests may have the probes' collector listen on (loopback only otherwise)")
    .action(serveCommand);

  program.addCommand(trainCommand());
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
  program.addCommand(joinCommand());
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
    // Bad input on the command line is the user's to fix there, so say where the usage is; a data error is not about usage.
    const pointer = err instanceof UsageError ? `${helpPointer(running)}\n` : '';
    errorOut(err, { json: running.opts().json === true, pointer });
    process.exitCode = 1;
  }
}
