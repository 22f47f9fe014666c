// A script benchmark's (and the script wizard's) telemetry window is its measured steps: the script's own exit after them (here a
// 1.5 s checkpoint save) is not in the samples its power, energy per sample and neighbours are read from.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { scriptWizard } from '../helpers/target-detail';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { PYTHON, runCli, SCRIPTS } from './script-helpers';
import { BenchmarkResultSchema } from '../../src-main/api/benchmark-result';
import { scriptBenchmark } from '../helpers/target-detail';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

describe("a script benchmark's telemetry window", () => {
  it('ends at the last measured step, not when the script has finished saving at exit', async () => {
    const r = await runCli(['benchmark-training', '--json', '--no-output', '--workspace', ws.dir, '--warmup-steps', '2', '--steps', '10', '--repeat', '1', '--', PYTHON, path.join(SCRIPTS, 'tiny_train.py'), 'save-at-exit']);
    expect(r.code, r.stderr).toBe(0);
    const result = scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(r.stdout)));
    const rep = result.repetitions[0];
    // The launch lasted the steps and the 1.5 s save; the window only the 10 steps of >= 50 ms.
    const measuredSeconds = (10 * rep.steadyStateMeanMs) / 1000;
    expect(rep.target.seconds).toBeGreaterThan(measuredSeconds + 1.4);
    const samples = readFileSync(path.join(ws.dir, result.runDir, 'telemetry-rep1.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { t: number });
    const spanSeconds = (samples.at(-1)!.t - samples[0].t) / 1000;
    console.log(`window ${spanSeconds.toFixed(2)} s over ${samples.length} samples; measured steps ${measuredSeconds.toFixed(2)} s; launch ${rep.target.seconds.toFixed(2)} s`);
    expect(spanSeconds).toBeLessThan(measuredSeconds + 0.5);
    expect(rep.telemetry.samples).toBe(samples.length);
  }, 120_000);

  it('is cut back to the last measured step when the script runs to its own end (no --steps)', async () => {
    // tiny_train.py trains 12 steps and exits, saving for 1.5 s: 10 measured steps after 2 warm-up ones.
    const r = await runCli(['benchmark-training', '--json', '--no-output', '--workspace', ws.dir, '--warmup-steps', '2', '--repeat', '1', '--', PYTHON, path.join(SCRIPTS, 'tiny_train.py'), 'save-at-exit']);
    expect(r.code, r.stderr).toBe(0);
    const result = scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(r.stdout)));
    const rep = result.repetitions[0];
    expect(rep.target.ended).toBe('exit');
    const measuredSeconds = (10 * rep.steadyStateMeanMs) / 1000;
    const recorded = readFileSync(path.join(ws.dir, result.runDir, 'telemetry-rep1.jsonl'), 'utf8').trim().split('\n').length;
    console.log(`kept ${rep.telemetry.samples} of ${recorded} samples; measured steps ${measuredSeconds.toFixed(2)} s; launch ${rep.target.seconds.toFixed(2)} s`);
    // The file keeps what was sampled during the save; the summary (power, energy, conditions) only the steps'.
    expect(rep.telemetry.samples).toBeLessThanOrEqual(Math.ceil(measuredSeconds / 0.2) + 1);
    expect(recorded).toBeGreaterThan(rep.telemetry.samples + 3);
  }, 120_000);

  it("ends at the last measured step in each of the script wizard's launches too", async () => {
    const r = await runCli(['optimise', '--json', '--workspace', ws.dir, '--warmup-steps', '2', '--steps', '10', '--repeat', '2', '--max-trials', '1', '--only', 'dataloader.num_workers', '--', PYTHON, path.join(SCRIPTS, 'tiny_train.py'), 'save-at-exit']);
    expect(r.code, r.stderr).toBe(0);
    const result = scriptWizard(JSON.parse(r.stdout));
    const dir = path.join(ws.dir, 'runs', result.runId);
    const windows = readdirSync(dir).filter((f) => /^telemetry-launch\d+\.jsonl$/.test(f));
    expect(windows.length).toBeGreaterThanOrEqual(4); // the baseline's two launches and a pair
    for (const f of windows) {
      const t = readFileSync(path.join(dir, f), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { t: number }).t);
      // 10 steps of >= 50 ms are ~0.6 s; the 1.5 s save at exit would make it 2 s or more.
      expect((t.at(-1)! - t[0]) / 1000, f).toBeLessThan(1.2);
    }
  }, 240_000);
});
