import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { findNvidiaSmi, notFoundMessage } from '../../src-main/core/telemetry/find-nvidia-smi';
import { tempDir } from '../helpers/temp-dir';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function root(): string {
  const t = tempDir('find-smi-');
  cleanups.push(t.cleanup);
  return t.dir;
}

/** A file at ...parts (made with its folders), executable unless mode says otherwise. */
function file(parts: string[], mode = 0o755): string {
  const f = path.join(...parts);
  mkdirSync(path.dirname(f), { recursive: true });
  writeFileSync(f, '#!/bin/sh\n');
  chmodSync(f, mode);
  return f;
}

describe('finding nvidia-smi on Linux', () => {
  it('takes the first PATH folder that holds it', () => {
    const r = root();
    const first = file([r, 'a', 'nvidia-smi']);
    file([r, 'b', 'nvidia-smi']);
    const env = { PATH: [path.join(r, 'missing'), path.join(r, 'a'), path.join(r, 'b')].join(':') };
    expect(findNvidiaSmi(env, 'linux').command).toBe(first);
  });

  it('skips a folder named nvidia-smi and a file that cannot be run', () => {
    const r = root();
    mkdirSync(path.join(r, 'dir', 'nvidia-smi'), { recursive: true });
    file([r, 'plain', 'nvidia-smi'], 0o644);
    const good = file([r, 'good', 'nvidia-smi']);
    const env = { PATH: ['dir', 'plain', 'good'].map((d) => path.join(r, d)).join(':') };
    expect(findNvidiaSmi(env, 'linux').command).toBe(good);
  });

  it('says how many PATH folders it looked in when there is none, and looks nowhere else', () => {
    const r = root();
    const lookup = findNvidiaSmi({ PATH: `${path.join(r, 'x')}:${path.join(r, 'y')}` }, 'linux');
    expect(lookup).toEqual({ command: null, onPath: [path.join(r, 'x', 'nvidia-smi'), path.join(r, 'y', 'nvidia-smi')], driverPlaces: [] });
    expect(notFoundMessage(lookup)).toBe(
      'no NVIDIA GPU found: nvidia-smi is not in any of the 2 folders on PATH (set TRAINBENCH_NVIDIA_SMI to its path if it is elsewhere)',
    );
  });
});

// The Windows lookup runs here with a fake environment whose folders are temp dirs.
describe('finding nvidia-smi.exe on Windows', () => {
  it('finds it in %SystemRoot%\\System32, where DCH drivers put it, when PATH lacks it', () => {
    const r = root();
    const system32 = file([r, 'Windows', 'System32', 'nvidia-smi.exe']);
    // Windows spells variable names freely: Path and SYSTEMROOT are the same variables.
    const env = { Path: path.join(r, 'bin'), SYSTEMROOT: path.join(r, 'Windows'), ProgramFiles: path.join(r, 'Program Files') };
    expect(findNvidiaSmi(env, 'win32').command).toBe(system32);
  });

  it('finds it in %ProgramFiles%\\NVIDIA Corporation\\NVSMI, where older drivers put it', () => {
    const r = root();
    const nvsmi = file([r, 'Program Files', 'NVIDIA Corporation', 'NVSMI', 'nvidia-smi.exe']);
    const env = { Path: '', SystemRoot: path.join(r, 'Windows'), ProgramFiles: path.join(r, 'Program Files') };
    expect(findNvidiaSmi(env, 'win32').command).toBe(nvsmi);
  });

  it('prefers PATH, whose entries may be quoted and ;-separated', () => {
    const r = root();
    file([r, 'Windows', 'System32', 'nvidia-smi.exe']);
    const onPath = file([r, 'my tools', 'nvidia-smi.exe']);
    const env = { PATH: `${path.join(r, 'none')};"${path.join(r, 'my tools')}"`, SystemRoot: path.join(r, 'Windows') };
    expect(findNvidiaSmi(env, 'win32').command).toBe(onPath);
  });

  it('names the driver places it looked in when there is none', () => {
    const r = root();
    const env = { PATH: path.join(r, 'bin'), SystemRoot: path.join(r, 'Windows'), ProgramFiles: path.join(r, 'PF') };
    const lookup = findNvidiaSmi(env, 'win32');
    expect(lookup.command).toBeNull();
    expect(notFoundMessage(lookup)).toBe(
      `no NVIDIA GPU found: nvidia-smi is not in any of the 1 folder on PATH, nor at ${path.join(r, 'Windows', 'System32', 'nvidia-smi.exe')}, ` +
        `nor at ${path.join(r, 'PF', 'NVIDIA Corporation', 'NVSMI', 'nvidia-smi.exe')} (set TRAINBENCH_NVIDIA_SMI to its path if it is elsewhere)`,
    );
  });

  it('falls back to C:\\Windows and C:\\Program Files when the environment does not say', () => {
    const lookup = findNvidiaSmi({}, 'win32');
    expect(lookup.onPath).toEqual([]);
    expect(lookup.driverPlaces).toEqual([
      path.join('C:\\Windows', 'System32', 'nvidia-smi.exe'),
      path.join('C:\\Program Files', 'NVIDIA Corporation', 'NVSMI', 'nvidia-smi.exe'),
    ]);
  });
});
