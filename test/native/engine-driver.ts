// Small C++ programs that call the engine library directly (build/libtb_engine.a), for
// native paths the addon's entry points do not reach on their own (test/native/<name>/check.cpp).
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { REPO_ROOT } from '../helpers/repo';

/** Compiles test/native/<name>/check.cpp against the engine into dir; returns the program's path. */
export function buildDriver(name: string, dir: string): string {
  const engine = path.join(REPO_ROOT, 'build', 'libtb_engine.a');
  if (!fs.existsSync(engine)) throw new Error(`${name} needs the engine library ${engine}: run npm run build:native`);
  const program = path.join(dir, name);
  execFileSync(process.env.CXX ?? 'c++', ['-std=c++17', '-O2', '-I', path.join(REPO_ROOT, 'native', 'src'),
    path.join(__dirname, name, 'check.cpp'), engine, '-lpthread', '-o', program], { stdio: 'inherit' });
  return program;
}

/** Runs a driver; its exit status 0 means every check passed, and stdout says what it checked. */
export function runDriver(program: string, env: NodeJS.ProcessEnv = {}): { status: number | null; output: string } {
  const r = spawnSync(program, [], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** The CPU kernels this machine can run, widest first (TB_CPU_KERNEL picks a narrower one). */
export function cpuKernels(): string[] {
  const flags = fs.existsSync('/proc/cpuinfo') ? fs.readFileSync('/proc/cpuinfo', 'utf8') : '';
  const kernels = ['generic'];
  if (/\bavx2\b/.test(flags) && /\bfma\b/.test(flags)) kernels.unshift('avx2');
  if (/\bavx512f\b/.test(flags)) kernels.unshift('avx512');
  return kernels;
}
