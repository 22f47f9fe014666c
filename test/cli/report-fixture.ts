// Real runs for the report and trace tests, made by the CLI on the CPU with Fashion-MNIST.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { CLI } from '../helpers/repo';

const run = promisify(execFile);

export async function cli(workspace: string, args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, ...args, '--workspace', workspace], { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** A training benchmark (3 repetitions of 5 + 30 steps) and its run id. */
export async function benchmarkRun(workspace: string, extra: string[] = []): Promise<string> {
  const out = await cli(workspace, ['benchmark-training', '--model', 'mlp', '--data', 'fashion-mnist', '--steps', '30', '--warmup-steps', '5', '--repeat', '3', '--json', '--no-progress', ...extra]);
  return (JSON.parse(out) as { runId: string }).runId;
}

/** A batch-size search under a 64 MiB cap on the CPU. */
export async function batchSearchRun(workspace: string): Promise<string> {
  const out = await cli(workspace, ['find-batch-size', '--model', 'mlp', '--data', 'fashion-mnist', '--memory-limit', '64MiB', '--json', '--no-progress']);
  return (JSON.parse(out) as { runId: string }).runId;
}

/** One epoch over a tenth of the training set. */
export async function trainRun(workspace: string): Promise<string> {
  const out = await cli(workspace, ['train', '--model', 'mlp', '--data', 'fashion-mnist', '--epochs', '1', '--sample-ratio', '0.1', '--json', '--no-progress']);
  const lines = out.trim().split('\n');
  return (JSON.parse(lines[lines.length - 1]) as { runId: string }).runId;
}
