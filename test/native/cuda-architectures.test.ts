// Issue 41 item 10: a first build compiles the CUDA code for this machine's GPUs only (nvidia-smi's compute
// capabilities), and skips the CUDA backend where there is no NVIDIA driver unless asked for; CMake is only
// configured here (nothing compiled), with a stand-in nvidia-smi that prints what a real one prints.
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, describe, expect, it } from 'vitest';

import { REPO_ROOT } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const CMAKE_JS = path.join(REPO_ROOT, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
const ws = tempDir('trainbench-cuda-archs-');
afterAll(() => ws.cleanup());
// Where CMake looks for nvcc without a CUDACXX: on PATH, or the toolkit's usual home.
const nvcc = (process.env.PATH ?? '').split(path.delimiter).some((d) => existsSync(path.join(d, 'nvcc'))) || existsSync('/usr/local/cuda/bin/nvcc');

/** A folder with an `nvidia-smi` answering the compute-capability query as a driver with these GPUs does ("9.0" per line on an H200). */
function gpus(caps: string[]): string {
  const dir = path.join(ws.dir, `smi-${caps.join('-') || 'none'}`);
  const script = path.join(dir, 'nvidia-smi');
  mkdirSync(dir, { recursive: true });
  writeFileSync(script, `#!/bin/sh\ncase "$*" in *compute_cap*) printf '${caps.map((c) => `${c}\\n`).join('')}';; *) echo "GPU 0: stand-in";; esac\n`);
  chmodSync(script, 0o755);
  return dir;
}

/** The configure's own line about the CUDA backend. */
async function cudaLine(name: string, env: Record<string, string | undefined>, flags: string[] = []): Promise<string> {
  const { TB_CUDA_ARCHITECTURES: _a, TB_WITH_CUDA: _w, ...inherited } = process.env;
  const { stdout } = await run(process.execPath, [CMAKE_JS, 'configure', '--out', path.join(ws.dir, name), ...flags], {
    cwd: REPO_ROOT,
    env: { ...inherited, ...env },
    maxBuffer: 1 << 24,
  });
  return /trainbench: (CUDA backend ON.*|no NVIDIA GPU found.*|nvcc not found.*)/.exec(stdout)?.[1] ?? stdout;
}

describe.skipIf(!nvcc)('the CUDA architectures a build compiles', () => {
  it("builds for this machine's GPUs, one architecture each", async () => {
    const PATH = `${gpus(['9.0', '8.6', '9.0'])}${path.delimiter}${process.env.PATH}`;
    expect(await cudaLine('two-gpus', { PATH })).toBe('CUDA backend ON (architectures 90;86)');
    // A driver that answers without a capability still has a GPU: the default list, not "no GPU".
    const na = `${gpus(['[N/A]'])}${path.delimiter}${process.env.PATH}`;
    expect(await cudaLine('no-capability', { PATH: na })).toBe('CUDA backend ON (architectures 80;86;89;90)');
  }, 240_000);

  it('skips the CUDA backend with no NVIDIA driver, and says how to build it', async () => {
    const PATH = (process.env.PATH ?? '').split(path.delimiter).filter((d) => !existsSync(path.join(d, 'nvidia-smi'))).join(path.delimiter);
    expect(await cudaLine('no-gpu', { PATH })).toMatch(/^no NVIDIA GPU found \(nvidia-smi\), CUDA backend skipped; npm run rebuild:native builds it for 80;86;89;90/);
    // Asked for (rebuild:native, or TB_WITH_CUDA=ON): the default list; an architecture named: that one.
    expect(await cudaLine('asked', { PATH }, ['--CDTB_CUDA_WITHOUT_GPU=ON'])).toBe('CUDA backend ON (architectures 80;86;89;90)');
    expect(await cudaLine('named', { PATH, TB_CUDA_ARCHITECTURES: '89' })).toBe('CUDA backend ON (architectures 89)');
  }, 300_000);
});
