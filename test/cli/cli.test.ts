import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DevicesSchema } from '../../src-main/api/devices';
import { GpuStateSchema, TelemetrySampleSchema } from '../../src-main/api/telemetry';
import { CLI, REPO_ROOT, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

async function trainbench(...args: string[]) {
  return trainbenchWith({}, ...args);
}

async function trainbenchWith(env: Record<string, string>, ...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { ...process.env, TRAINBENCH_WORKSPACE: ws.dir, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('trainbench devices', () => {
  it('prints the engine answer as JSON with --json', async () => {
    const { code, stdout } = await trainbench('devices', '--json');
    expect(code).toBe(0);
    const devices = DevicesSchema.parse(JSON.parse(stdout));
    expect(devices.cpu.logicalCores).toBeGreaterThan(0);
  });

  it('prints the same answer for people', async () => {
    const [{ stdout: text }, { stdout: json }] = await Promise.all([trainbench('devices'), trainbench('devices', '--json')]);
    const devices = DevicesSchema.parse(JSON.parse(json));
    expect(text).toContain(`CPU   ${devices.cpu.name}`);
    expect(text).toMatch(/^CUDA {2}/m);
    if (!devices.cuda.available) expect(text).toContain(devices.cuda.reason ?? '');
    expect(text).toContain(`Training will use: ${devices.cuda.available ? 'cuda:0' : 'cpu'}`);
  });
});

describe('trainbench serve', () => {
  it('refuses a bad port, naming the value', async () => {
    const { code, stderr } = await trainbench('serve', '--port', '70000');
    expect(code).not.toBe(0);
    expect(stderr).toContain('"70000"');
  });

  it('ends by itself when the port is taken, naming it (its engine host stopped, which kept it alive)', async () => {
    const held = net.createServer();
    await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
    const { port } = held.address() as net.AddressInfo;
    try {
      // It used to print EADDRINUSE and hang, its engine host alive: execFile's timeout would kill it here.
      const child = execFile(process.execPath, [CLI, 'serve', '--port', String(port), '--workspace', ws.dir], { timeout: 60_000 });
      let stderr = '';
      child.stderr!.on('data', (d: string) => (stderr += d));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      expect(code, stderr).toBe(1);
      expect(stderr).toContain(`trainbench: port ${port} on 127.0.0.1 is in use: stop what holds it, or choose another with --port`);
    } finally {
      held.close();
    }
  }, 90_000);
});

describe('trainbench', () => {
  it('prints the package version with --version', async () => {
    const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const { code, stdout } = await trainbench(flag);
      expect(code).toBe(0);
      expect(stdout.trim()).toBe(`trainbench ${version}`);
    }
  });

  it('refuses an unknown command with the message and one line pointing to --help', async () => {
    const { code, stderr } = await trainbench('trian');
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/unknown command 'trian'/);
    expect(stderr).toContain("Run 'trainbench --help' for the usage.");
    expect(stderr).not.toContain('Commands:');
    expect(stderr.trim().split('\n').length).toBeLessThanOrEqual(3);
  });

  it('points a bad option of a subcommand to that subcommand\'s --help, not the whole help', async () => {
    const { code, stderr } = await trainbench('train', '--bogus');
    expect(code).not.toBe(0);
    expect(stderr.trim().split('\n')).toEqual(["error: unknown option '--bogus'", "Run 'trainbench train --help' for the usage."]);
  });

  it('points to --help for subcommands defined in their own files too', async () => {
    const { stderr } = await trainbench('cache', 'build', '--shard-size', 'huge');
    expect(stderr).toContain('"huge"');
    expect(stderr).toContain("Run 'trainbench cache build --help' for the usage.");
    expect(stderr).not.toContain('Options:');
  });

  it('says a failure in words, never a contract code; under --json the code is on stdout for scripts', async () => {
    const { code, stdout, stderr } = await trainbench('train', '--model', 'nope', '--json');
    expect(code).toBe(1);
    expect(stderr).toMatch(/^trainbench: --model "nope" is neither/);
    expect(stderr).not.toMatch(/\bE_[A-Z_]+\b/);
    expect(JSON.parse(stdout)).toEqual({ error: { code: 'E_BAD_INPUT', message: expect.stringMatching(/^--model "nope" is neither/) } });
    // Without --json, stdout stays empty: the words go to stderr only.
    expect((await trainbench('train', '--model', 'nope')).stdout).toBe('');
  });

  it('indents the later lines of a message, so a value with a line break cannot print a line of its own', async () => {
    const { code, stderr } = await trainbench('train', '--model', 'x\ntrainbench: run 1 completed');
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines[0]).toMatch(/^trainbench: --model "x\\ntrainbench: run 1 completed" is neither/);
    // The message quotes the value twice: once escaped, once inside the paths it looked at, whose line break stays one.
    expect(lines.length).toBeGreaterThan(2);
    expect(lines.slice(1, -1).every((l) => l.startsWith('  '))).toBe(true);
    expect(lines.filter((l) => l.startsWith('trainbench:'))).toHaveLength(1);
    expect(lines.at(-1)).toBe("Run 'trainbench train --help' for the usage.");
  });

  it('ends a data error without the --help pointer: the usage would not help (re-attacks 18, 19)', async () => {
    const missing = path.join(ws.dir, 'sources', 'not-there.npy');
    const { code, stderr } = await trainbench('cache', 'build', missing, '--name', 'gone');
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(/^trainbench: cannot read .*not-there\.npy: it does not exist; check the path$/)]);
    // The same command's own bad input still points to its usage.
    expect((await trainbench('cache', 'build', '--name', 'gone')).stderr).toContain("Run 'trainbench cache build --help' for the usage.");
  });

  it('says why a workspace folder cannot be made, at once: Node\'s recursive mkdir span for ever under /proc (seventh re-attack of issue 41)', async () => {
    const proc = await trainbench('runs', '--workspace', '/proc/self/x');
    expect(proc.code).toBe(1);
    expect(proc.stderr).toBe('trainbench: cannot use /proc/self/x as a workspace: cannot create /proc/self/x: /proc/self does not take new folders\n');
    const file = path.join(ws.dir, 'a-file');
    writeFileSync(file, 'x');
    const underFile = await trainbench('runs', '--workspace', path.join(file, 'ws'));
    expect(underFile.stderr).toBe(`trainbench: cannot use ${path.join(file, 'ws')} as a workspace: cannot create ${path.join(file, 'ws')}: a part of its path is a file, not a folder\n`);
  });

  it('adds the --help pointer to bad input found by the command itself', async () => {
    const { code, stderr } = await trainbench('train', '--model', 'resnet50');
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([
      expect.stringContaining('trainbench: --model "resnet50" is neither a built-in model'),
      "Run 'trainbench train --help' for the usage.",
    ]);
  });
});

describe('trainbench train choices', () => {
  it('suggests adamw for --optimizer adam', async () => {
    const { code, stderr } = await trainbench('train', '--optimizer', 'adam');
    expect(code).not.toBe(0);
    expect(stderr).toContain('--optimizer must be one of sgd, adamw, got "adam"; did you mean "adamw"?');
  });

  it('suggests the choice a swapped pair of letters meant, and none for a far-off value', async () => {
    expect((await trainbench('train', '--optimizer', 'sdg')).stderr).toContain('did you mean "sgd"?');
    const { stderr } = await trainbench('train', '--precision', 'int4');
    expect(stderr).toContain('--precision must be one of fp32, bf16, fp16, got "int4"');
    expect(stderr).not.toContain('did you mean');
  });
});

describe('trainbench monitor --json', () => {
  it('says why gpus is empty in every sample', async () => {
    const { code, stdout } = await trainbenchWith({ TRAINBENCH_NVIDIA_SMI: '/nonexistent/nvidia-smi' }, 'monitor', '--json', '--count', '2', '--interval', '200');
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(2);
    const last = lines[1];
    expect(TelemetrySampleSchema.parse(last).gpus).toEqual([]);
    const state = GpuStateSchema.parse(last.gpuState);
    expect(state.status).toBe('absent');
    expect(state.message).toContain('no NVIDIA GPU found: /nonexistent/nvidia-smi is not installed or not on PATH');
  });
});
