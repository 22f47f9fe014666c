// Issue 14: a script that crashes, hangs or prints garbage never breaks the workbench; the probe chains an existing sitecustomize.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseRunRecord } from '../../src-main/api/run-record';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, runCli, SCRIPTS } from './script-helpers';
import { BenchmarkResultSchema } from '../../src-main/api/benchmark-result';
import { scriptBenchmark } from '../helpers/target-detail';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

const TINY = path.join(SCRIPTS, 'tiny_train.py');

function run(flags: string[], command: string[], mark = newMark()) {
  return runCli(['benchmark-training', '--no-output', '--repeat', '1', '--warmup-steps', '1', '--workspace', ws.dir, '--env', `TB_TEST_MARK=${mark}`, ...flags, '--', ...command]).then((r) => ({ ...r, mark }));
}

/** The run records of the workspace, newest last. */
function runs() {
  return readdirSync(path.join(ws.dir, 'runs'))
    .sort()
    .map((id) => parseRunRecord(readFileSync(path.join(ws.dir, 'runs', id, 'run.json'), 'utf8')).record!);
}

describe('scripts that misbehave', () => {
  it('a crash is a failed run naming the exit code, the steps done and the traceback', async () => {
    const { code, stderr, mark } = await run([], [PYTHON, TINY, 'crash']);
    expect(code).toBe(1);
    expect(stderr).toContain('trainbench: the script exited with code 1 after 3 optimizer step(s)');
    expect(stderr).not.toContain('--help'); // a crash is not a usage error
    expect(stderr).toContain('ValueError: the model exploded at step 3');
    const last = runs().at(-1)!;
    expect(last.status).toBe('failed');
    expect(last.error?.message).toContain('exited with code 1');
    expect(processesWithMark(mark)).toEqual([]);
  }, 60_000);

  it('a hang is killed after the timeout with its child processes, and says so', async () => {
    const t0 = Date.now();
    const { code, stderr, mark } = await run(['--timeout', '6'], [PYTHON, TINY, 'hang']);
    expect(code).toBe(1);
    expect(stderr).toContain('trainbench: timed out: the script did not finish within 6 s (last optimizer step seen: 2); it was killed with its process group');
    expect(stderr).toContain('hanging now');
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(processesWithMark(mark)).toEqual([]);
  }, 60_000);

  it('garbage on stdout and stderr (bad UTF-8, a fake probe line, a 100 kB line) changes nothing', async () => {
    const { code, stdout, stderr, mark } = await run(['--json', '--steps', '6'], [PYTHON, TINY, 'garbage']);
    expect(code, stderr).toBe(0);
    const r = scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(stdout)));
    expect(r.target.ranks[0].steps).toBe(7);
    expect(r.batchSize).toBe(16); // not the fake line's million samples
    const log = readFileSync(path.join(ws.dir, r.runDir, 'output-rep1.log'), 'utf8').split('\n');
    expect(log).toContain('O progress 100%');
    expect(log.some((l) => l.startsWith('O xxxxxxxx') && l.length <= 8192 + 2)).toBe(true);
    expect(processesWithMark(mark)).toEqual([]);
  }, 60_000);

  it('a command that does not exist is refused with its name', async () => {
    const { code, stderr } = await run([], ['no-such-trainer-xyz', 'train.py']);
    expect(code).toBe(1);
    expect(stderr).toContain('cannot start the command: "no-such-trainer-xyz" was not found');
  });

  it('a working directory that does not exist is named as such, not as a missing command', async () => {
    const missing = path.join(ws.dir, 'no-such-folder');
    const { code, stderr } = await run(['--cwd', missing], [PYTHON, 'train.py']);
    expect(code).toBe(1);
    expect(stderr).toContain(`cannot start the command: the working directory ${JSON.stringify(missing)} does not exist`);
    expect(stderr).not.toContain('was not found');
  });

  it('a working directory that is a file, or whose name is too long, is named as such: spawn throws for these (re-attack 41)', async () => {
    const file = path.join(ws.dir, 'a-file');
    writeFileSync(file, 'x');
    const underFile = await run(['--cwd', file], [PYTHON, 'train.py']);
    expect(underFile.code).toBe(1);
    expect(underFile.stderr).toContain(`cannot start the command: the working directory ${JSON.stringify(file)} is not a folder`);
    const long = path.join(ws.dir, 'x'.repeat(300));
    const tooLong = await run(['--cwd', long], [PYTHON, 'train.py']);
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toContain(`cannot start the command: the working directory ${JSON.stringify(long)} cannot be used: its name is longer than the file system allows`);
    expect(underFile.stderr + tooLong.stderr).not.toMatch(/spawn E|unexpected/);
  });

  it('a command whose path runs through a file or a loop of links says so, not "spawn ENOTDIR" (fifth re-attack of issue 41)', async () => {
    writeFileSync(path.join(ws.dir, 'plain-file'), 'x');
    const throughFile = path.join(ws.dir, 'plain-file', 'python3');
    symlinkSync('loop-b', path.join(ws.dir, 'loop-a'));
    symlinkSync('loop-a', path.join(ws.dir, 'loop-b'));
    const throughLoop = path.join(ws.dir, 'loop-a', 'python3');
    const file = await run([], [throughFile, 'train.py']);
    const loop = await run([], [throughLoop, 'train.py']);
    expect(file.code).toBe(1);
    expect(file.stderr).toContain(`cannot start the command: ${JSON.stringify(throughFile)} cannot be reached: a part of its path is a file, not a folder`);
    expect(loop.code).toBe(1);
    expect(loop.stderr).toContain(`cannot start the command: ${JSON.stringify(throughLoop)} cannot be reached: its path goes through links that loop`);
    expect(file.stderr + loop.stderr).not.toMatch(/spawn E|unexpected/);
  });

  it('started in a folder since removed, the CLI says so, not the system call that failed (second re-attack of issue 41)', () => {
    const gone = path.join(ws.dir, 'gone');
    // The shell enters the folder, removes it, then becomes the CLI: its working directory no longer exists.
    const r = spawnSync('sh', ['-c', 'mkdir "$1" && cd "$1" && rmdir "$1" && exec "$2" "$3" benchmark-training --workspace "$4" -- python3 train.py', 'sh', gone, process.execPath, CLI, ws.dir], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('trainbench: the folder this command was started in cannot be read (removed, or a path too long): cd to another folder and run it again\n');
  });

  it('a command that trains nothing says the probe saw no optimizer step', async () => {
    const { code, stderr } = await run([], [PYTHON, '-c', 'import torch; print("no training here")']);
    expect(code).toBe(1);
    expect(stderr).toContain("ran no optimizer step that Trainbench's probe saw");
  });

  it('an override with nothing to apply to (no DataLoader) fails the run instead of passing silently', async () => {
    const loop = 'import torch\nm = torch.nn.Linear(2, 1)\no = torch.optim.SGD(m.parameters(), lr=0.1)\nfor _ in range(5):\n    m(torch.ones(4, 2)).sum().backward(); o.step()\n';
    const { code, stderr } = await run(['--set', 'dataloader.num_workers=2'], [PYTHON, '-c', loop]);
    expect(code).toBe(1);
    expect(stderr).toContain('override dataloader.num_workers=2 was not applied: the script created no DataLoader');
  }, 60_000);

  it('a DDP override on a script that makes no DistributedDataParallel model fails the run, saying so', async () => {
    const loop = 'import torch\nm = torch.nn.Linear(2, 1)\no = torch.optim.SGD(m.parameters(), lr=0.1)\nfor _ in range(5):\n    m(torch.ones(4, 2)).sum().backward(); o.step()\n';
    const { code, stderr } = await run(['--set', 'ddp.static_graph=true'], [PYTHON, '-c', loop]);
    expect(code).toBe(1);
    expect(stderr).toContain('override ddp.static_graph=true was not applied: the script made no DistributedDataParallel model');
  }, 60_000);

  it('the wizard refuses a script without a DataLoader by saying there are no samples to count, not with an internal error', async () => {
    const loop = 'import torch\nm = torch.nn.Linear(2, 1)\no = torch.optim.SGD(m.parameters(), lr=0.1)\nfor _ in range(8):\n    o.zero_grad(); m(torch.ones(4, 2)).sum().backward(); o.step()\n';
    const { code, stderr } = await runCli(['optimise', '--repeat', '2', '--warmup-steps', '1', '--steps', '3', '--workspace', ws.dir, '--', PYTHON, '-c', loop]);
    expect(code).toBe(1);
    expect(stderr).toContain('trainbench: launch 1 counted no samples: the probe counts the samples in the batches a torch DataLoader yields');
    expect(stderr).not.toContain('unexpected error');
  }, 60_000);

  it('runs a sitecustomize the environment already has, through a shell wrapper, and still measures', async () => {
    const chained = path.join(SCRIPTS, 'chained_site');
    const { code, stdout, stderr } = await run(
      ['--json', '--steps', '4', '--env', `PYTHONPATH=${chained}`],
      ['/bin/sh', '-c', `exec "${PYTHON}" "${TINY}" plain`],
    );
    expect(code, stderr).toBe(0);
    const r = scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(stdout)));
    expect(r.steps).toBe(4);
    const log = readFileSync(path.join(ws.dir, r.runDir, 'output-rep1.log'), 'utf8');
    expect(log).toContain('O chained sitecustomize ran');
  }, 60_000);
});
