// On the emulated CUDA device (npm run test:gpu-emu) every place a number appears says so:
// the CLI before and beside its results, the run's record, and the ADR written from it. On a
// real GPU (or none) this file skips and says why.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { EMULATED, gpuTimeout } from './gpu-gate';

const run = promisify(execFile);
const ws = tempDir();
if (!EMULATED) console.log('emulated-device labelling test skipped: this engine build is not the emulated CUDA device');
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

describe.skipIf(!EMULATED)('the emulated CUDA device says what it is', () => {
  it('in the benchmark output, the run record and the report', async () => {
    const { stdout, stderr } = await run(
      process.execPath,
      [CLI, 'benchmark-training', '--model', 'mlp', '--data', 'fashion-mnist', '--device', 'cuda:0', '--batch-size', '32',
        '--warmup-steps', '1', '--steps', '1', '--repeat', '1', '--no-progress', '--workspace', ws.dir],
      { env: process.env, maxBuffer: 1 << 24 },
    );
    const warning = 'cuda:0 is the emulated CUDA device, emulated (CPU)';
    expect(stderr).toContain(warning);
    expect(stdout).toContain(warning);
    const [runId] = readdirSync(path.join(ws.dir, 'runs'));
    const record = JSON.parse(readFileSync(path.join(ws.dir, 'runs', runId, 'run.json'), 'utf8')) as { environment: { computeDevice?: unknown } };
    expect(record.environment.computeDevice).toEqual({ id: 'cuda:0', name: 'Trainbench emulated CUDA device, emulated (CPU)', emulated: true });

    await run(process.execPath, [CLI, 'report', '--workspace', ws.dir, runId], { env: process.env });
    const reports = path.join(ws.dir, 'reports');
    const [folder] = readdirSync(reports);
    const md = readFileSync(path.join(reports, folder, `${folder}.md`), 'utf8');
    expect(md).toContain(`\`${runId}\` ran on the emulated CUDA device**, emulated (CPU)`);
  }, gpuTimeout(600_000));

  it("in the optimisation wizard's floors: the copy and compute rates are the CPU's", async () => {
    const { stdout } = await run(
      process.execPath,
      [CLI, 'optimise', '--model', 'mlp', '--data', 'fashion-mnist', '--device', 'cuda:0', '--batch-size', '32', '--warmup-steps', '1',
        '--steps', '1', '--repeat', '2', '--max-trials', '1', '--no-batch-search', '--no-progress', '--workspace', ws.dir],
      { env: process.env, maxBuffer: 1 << 24 },
    );
    const line = (name: string) => stdout.split('\n').find((l) => l.startsWith(`  ${name} `)) ?? '';
    expect(line('h2d')).toMatch(/^ {2}h2d +[\d.]+ ms .*25,100 bytes per step at [\d,.]+ MB\/s host-to-device \(emulated device \(CPU memcpy\), not a GPU's rate: pinned cudaMemcpyAsync to cuda:0, best of 10/);
    expect(line('compute')).toContain("(emulated device (CPU), not a GPU's rate: ");
  }, gpuTimeout(300_000));
});
