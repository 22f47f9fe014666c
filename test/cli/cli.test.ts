import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DevicesSchema } from '../../src-main/api/devices';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

async function trainbench(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { ...process.env, TRAINBENCH_WORKSPACE: ws.dir } });
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
});

describe('trainbench', () => {
  it('refuses an unknown command with help', async () => {
    const { code, stderr } = await trainbench('trian');
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/unknown command 'trian'/);
  });
});
