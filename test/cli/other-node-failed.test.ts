// Issue 40: when another node's part of a launch fails, the node that measures hears it from `trainbench join` and
// ends its own part soon after, saying which node failed and how, instead of waiting in torchrun's exit barrier
// until the launch times out (seen: a rank aborted at exit, and node 0 waited the whole 150 s timeout).
import { spawn } from 'node:child_process';

import { afterAll, describe, expect, it } from 'vitest';

import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const ws = tempDir();
afterAll(() => ws.cleanup());

describe("a job across nodes whose other node's part fails", () => {
  it('ends the launch here within seconds, naming the node and its exit code', async () => {
    requireBuilt();
    const t0 = Date.now();
    // This node's part waits as a torchrun agent in its exit barrier would: far longer than the test.
    const node0 = spawn(process.execPath, [CLI, 'benchmark-training', '--collector', '127.0.0.1', '--warmup-steps', '1', '--steps', '2', '--repeat', '1', '--timeout', '120', '--workspace', ws.dir, '--', 'python3', '-c', 'import time; time.sleep(110)'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let joined: Promise<number> | null = null;
    node0.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      const code = /trainbench join (\S+) --/.exec(stderr)?.[1];
      if (!code || joined) return;
      const join = spawn(process.execPath, [CLI, 'join', code, '--', 'sh', '-c', 'sleep 1; exit 3'], { stdio: 'ignore' });
      joined = new Promise((resolve) => join.on('close', (status) => resolve(status ?? 1)));
    });
    const code = await new Promise<number>((resolve) => node0.on('close', (status) => resolve(status ?? 1)));
    const seconds = (Date.now() - t0) / 1000;
    expect(joined, stderr).not.toBeNull();
    expect(await joined).toBe(0); // join follows the job to its end: its part's failure is the launch's, said there
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/trainbench: node \S+'s part of the job exited with code 3; this node's part is stopped in 10 s unless it ends first \(what every rank measured by then is kept\)/);
    expect(stderr).toMatch(/trainbench: node \S+'s part of the job exited with code 3, after 0 optimizer step\(s\) here: the job cannot finish without it, so this node's part was stopped 10 s later/);
    expect(seconds).toBeLessThan(60);
  }, 150_000);
});
