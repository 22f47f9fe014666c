// Benchmarks print their table and write JSON only where asked (--out, --save);
// they leave nothing in the tree or the temp folder, also when interrupted.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterEach, beforeAll, describe, expect, it } from 'vitest';

import { REPO_ROOT, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const TELEMETRY = path.join(REPO_ROOT, 'bench', 'telemetry', 'bench-samplers.mjs');
const LOADER = path.join(REPO_ROOT, 'bench', 'loader', 'bench-loader.mjs');
const RESULTS = path.join(REPO_ROOT, 'bench', 'results');

beforeAll(requireBuilt);

const dirs: { cleanup(): void }[] = [];
afterEach(() => dirs.splice(0).forEach((d) => d.cleanup()));

/** A private TMPDIR for the benchmark, so anything it leaves there is seen. */
function privateTmp(): string {
  const t = tempDir('trainbench-bench-tmp-');
  dirs.push(t);
  return t.dir;
}

const benchEnv = (tmp: string) => ({ ...process.env, TMPDIR: tmp });

describe('benchmark output', () => {
  it('prints the table and writes nothing without --out or --save', async () => {
    const tmp = privateTmp();
    const before = readdirSync(RESULTS);
    const { stdout } = await run(process.execPath, [TELEMETRY, '--seconds', '0.5'], { env: benchEnv(tmp) });
    expect(stdout).toMatch(/host sampler only: +[\d.]+% of one core/);
    expect(stdout).toContain(`not saved: add --out FILE, or --save for bench/results/telemetry-${os.hostname()}.json`);
    expect(readdirSync(RESULTS)).toEqual(before);
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('writes the JSON to the --out path it is given', async () => {
    const tmp = privateTmp();
    const out = path.join(privateTmp(), 'nested', 'telemetry.json');
    const { stdout } = await run(process.execPath, [TELEMETRY, '--seconds', '0.5', '--out', out], { env: benchEnv(tmp) });
    const result = JSON.parse(readFileSync(out, 'utf8'));
    expect(result.benchmark).toBe('telemetry-samplers');
    expect(result.hostSamplerOnly.samples).toBeGreaterThan(0);
    expect(stdout).toContain('wrote ');
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('writes bench/results/<name>.json with --save', async (ctx) => {
    const saved = path.join(RESULTS, `telemetry-${os.hostname()}.json`);
    if (existsSync(saved)) ctx.skip(`${saved} is a committed result of this host: left alone`);
    try {
      await run(process.execPath, [TELEMETRY, '--seconds', '0.5', '--save'], { env: benchEnv(privateTmp()) });
      expect(JSON.parse(readFileSync(saved, 'utf8')).benchmark).toBe('telemetry-samplers');
    } finally {
      rmSync(saved, { force: true });
    }
  });

  it('refuses --out without a path, naming the flag', async () => {
    const err = await run(process.execPath, [TELEMETRY, '--out'], { env: benchEnv(privateTmp()) }).catch((e) => e);
    expect(err.code).toBe(2);
    expect(err.stderr).toContain('--out needs a value');
  });

  it('removes its temporary workspace when interrupted with Ctrl-C', async () => {
    const tmp = privateTmp();
    const child = spawn(process.execPath, [LOADER, '--records', '20000', '--seconds', '5'], { env: benchEnv(tmp), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // Interrupt once the benchmark has started writing its dataset.
    const started = Date.now();
    while (!readdirSync(tmp).some((d) => existsSync(path.join(tmp, d, 'sources')))) {
      if (Date.now() - started > 20_000) throw new Error(`the loader benchmark made no workspace in ${tmp}: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('SIGINT: removing');
    expect(readdirSync(tmp)).toEqual([]);
  });
});
