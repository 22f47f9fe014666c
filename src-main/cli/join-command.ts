import { spawn } from 'node:child_process';
import path from 'node:path';

import { Command } from 'commander';

import { ApiError } from '../api/errors';
import { decodeJoin } from '../core/script/probe-channel';
import { probeDir } from '../core/script/launcher';

/**
 * `trainbench join CODE -- command...` on each other node of a job across machines (issue 40): runs this node's part
 * of the job (its torchrun) with the probe in every rank, reporting to the collector of the benchmark that printed
 * the code. Nothing is measured or saved here; the command's output and exit code are its own.
 */
async function join(code: string, command: string[]): Promise<void> {
  if (command.length === 0) throw new ApiError('E_BAD_INPUT', "no command to run: put this node's part of the job after '--' (e.g. trainbench join CODE -- torchrun --nnodes 2 --node_rank 1 ... train.py)");
  const probe = decodeJoin(code);
  const inherited = process.env.PYTHONPATH;
  const env = { ...process.env, ...probe, PYTHONPATH: inherited ? `${probeDir()}${path.delimiter}${inherited}` : probeDir() };
  const child = spawn(command[0], command.slice(1), { env, stdio: 'inherit' });
  // A Ctrl-C reaches the command through the terminal's process group; a TERM sent to this process is passed on.
  const forward = () => child.kill('SIGTERM');
  process.on('SIGTERM', forward);
  try {
    process.exitCode = await new Promise<number>((resolve, reject) => {
      child.once('error', (err) => reject(new ApiError('E_BAD_INPUT', `cannot start ${JSON.stringify(command[0])}: ${err.message}`)));
      child.once('exit', (status, signal) => resolve(status ?? (signal ? 128 + 15 : 1)));
    });
  } finally {
    process.off('SIGTERM', forward);
  }
}

export function joinCommand(): Command {
  return new Command('join')
    .description("run this node's part of a job across machines with the probe, reporting to the benchmark that printed CODE (benchmark-training --collector)")
    .argument('<code>', 'the join code the benchmark printed for this launch')
    .argument('[command...]', "this node's part of the job, after '--'")
    .action(join);
}
