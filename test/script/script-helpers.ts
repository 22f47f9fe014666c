import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { firstTorchPython } from '../helpers/pythons';
import { CLI, REPO_ROOT } from '../helpers/repo';

export const SCRIPTS = path.join(REPO_ROOT, 'test', 'fixtures', 'scripts');

/** The first Python that imports torch (Debian's python3-torch in /usr/bin/python3, which a pyenv shim may hide). */
export const PYTHON = firstTorchPython();
export const TORCHRUN = path.join(path.dirname(PYTHON), 'torchrun');

/** Runs `body` with the probe's collectives module imported as `c` (and json, sys), and parses what it prints as JSON. */
export function withProbeCollectives(body: string): unknown {
  const probe = path.join(REPO_ROOT, 'resources', 'python');
  const code = `import json, sys\nsys.path.insert(0, ${JSON.stringify(probe)})\nfrom trainbench_probe import collectives as c\n${body}`;
  return JSON.parse(execFileSync(PYTHON, ['-c', code], { encoding: 'utf8' }).trim());
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to the end and returns its exit code and output (never throws on a non-zero exit). */
export function runCli(args: string[], timeoutMs = 240_000, env: NodeJS.ProcessEnv = process.env): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { maxBuffer: 64 << 20, timeout: timeoutMs, env }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
    });
  });
}

/** A value to put in a launch's environment, so its processes (and their children) can be found later. */
export function newMark(): string {
  return `tbmark-${randomBytes(6).toString('hex')}`;
}

/** Pids of live processes whose environment carries the mark (zombies have no environment and are not counted). */
export function processesWithMark(mark: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(`TB_TEST_MARK=${mark}`)) found.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}
