// Issue 14: `trainbench benchmark-training -- <command>` on a tutorial-style Fashion-MNIST script, unchanged (CPU torch).
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseRunRecord } from '../../src-main/api/run-record';
import type { ScriptBenchmarkResult } from '../../src-main/api/benchmark-result';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, runCli, SCRIPTS } from './script-helpers';
import { BenchmarkResultSchema } from '../../src-main/api/benchmark-result';
import { scriptBenchmark } from '../helpers/target-detail';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

const TUTORIAL = path.join(SCRIPTS, 'fashion_mnist_tutorial.py');

async function benchmark(flags: string[], command: string[], mark = newMark()) {
  const r = await runCli(['benchmark-training', '--json', '--no-output', '--workspace', ws.dir, '--env', `TB_TEST_MARK=${mark}`, ...flags, '--', ...command]);
  const result = r.code === 0 ? scriptBenchmark(BenchmarkResultSchema.parse(JSON.parse(r.stdout))) : null;
  return { ...r, result, mark };
}

function outputLog(result: ScriptBenchmarkResult, repetition: number): string[] {
  return readFileSync(path.join(ws.dir, result.runDir, `output-rep${repetition}.log`), 'utf8').split('\n');
}

describe('benchmark-training -- <command> on a tutorial-style Fashion-MNIST script', () => {
  it('reports steps, batch, samples/s and data wait that agree with the script when it runs to its own end', async () => {
    // 1280 images at batch 64: the script's own count is 20 steps.
    const { result, code, stderr, mark } = await benchmark(['--warmup-steps', '3', '--repeat', '1'], [PYTHON, TUTORIAL, '--epochs', '1', '--limit', '1280']);
    expect(code, stderr).toBe(0);
    const r = result!;
    const done = outputLog(r, 1).find((l) => l.includes('Done! steps='));
    expect(done).toBeDefined();
    const scriptSteps = Number(/steps=(\d+)/.exec(done!)![1]);
    expect(scriptSteps).toBe(20);
    expect(r.target.ranks).toHaveLength(1);
    expect(r.target.ranks[0].steps).toBe(scriptSteps);
    expect(r.steps).toBe(scriptSteps - 3);
    expect(r.repetitions[0].target.ended).toBe('exit');
    expect(r.batchSize).toBe(64);
    expect(r.samplesPerSec).toBeGreaterThan(0);
    // samples/s is the batch over the steady step, as benchmark-training defines it.
    expect(r.samplesPerSec).toBeCloseTo((1000 * 64) / r.stepTime.steadyStateMeanMs, 6);
    expect(r.target.dataWait.percent).toBeGreaterThan(0);
    expect(r.target.dataWait.percent).toBeLessThan(100);
    expect(r.phasesPercent.data).toBeGreaterThan(0);
    expect(r.phasesMs.forward).toBeGreaterThan(0);
    expect(r.phasesMs.backward).toBeGreaterThan(0);
    expect(r.phasesMs.optimizer).toBeGreaterThan(0);
    expect(Object.values(r.phasesPercent).reduce((s, x) => s + x, 0)).toBeCloseTo(100, 6);
    expect(r.device).toBe('cpu');
    // Saved as a run of kind benchmark whose target is the script.
    const { record } = parseRunRecord(readFileSync(path.join(ws.dir, r.runDir, 'run.json'), 'utf8'));
    expect(record?.kind).toBe('benchmark');
    expect(record?.status).toBe('completed');
    expect(record?.config.target).toMatchObject({ kind: 'script', command: [PYTHON, TUTORIAL, '--epochs', '1', '--limit', '1280'] });
    expect(processesWithMark(mark)).toEqual([]);
  }, 120_000);

  it('stops the script after the measured steps, every launch, and leaves no process behind', async () => {
    const t0 = Date.now();
    const { result, code, stderr, mark } = await benchmark(['--warmup-steps', '3', '--steps', '10', '--repeat', '2'], [PYTHON, TUTORIAL, '--epochs', '5']);
    expect(code, stderr).toBe(0);
    const r = result!;
    expect(r.steps).toBe(10);
    expect(r.repetitions).toHaveLength(2);
    for (const rep of r.repetitions) {
      expect(rep.target.ended).toBe('steps');
      expect(rep.target.exitCode).toBe(0);
      expect(rep.target.ranks[0].steps).toBe(13);
      // The script prints after its optimizer step; the probe ends it inside the 13th.
      const printed = outputLog(r, rep.repetition).filter((l) => /^O step \d+$/.test(l)).map((l) => Number(l.split(' ')[2]));
      expect(Math.max(...printed)).toBe(12);
    }
    expect(r.samplesPerSecCi.low).toBeLessThanOrEqual(r.samplesPerSecCi.median);
    // Five epochs of 938 steps would take minutes; the trial takes seconds.
    expect(Date.now() - t0).toBeLessThan(60_000);
    expect(processesWithMark(mark)).toEqual([]);
  }, 120_000);

  it('applies --set dataloader.num_workers=2 (the script prints its loader setting) and reaps the workers', async () => {
    const { result, code, stderr, mark } = await benchmark(
      // Steps enough for the process-group sampler (every 200 ms) to see the workers once they have started.
      ['--warmup-steps', '2', '--steps', '20', '--repeat', '1', '--set', 'dataloader.num_workers=2'],
      [PYTHON, TUTORIAL, '--epochs', '1', '--limit', '2000'],
    );
    expect(code, stderr).toBe(0);
    const r = result!;
    expect(outputLog(r, 1)).toContain('O num_workers=2 batch_size=64');
    expect(r.target.applied).toContainEqual(expect.objectContaining({ key: 'dataloader.num_workers', value: 2, rank: 0 }));
    expect(r.target.applied[0].where).toContain('fashion_mnist_tutorial.py:');
    // The whole tree was sampled: the script and its two worker processes.
    expect(r.repetitions[0].target.processTree?.processes).toBeGreaterThanOrEqual(3);
    expect(processesWithMark(mark)).toEqual([]);
  }, 120_000);

  it('refuses an unknown override key, listing the known ones, before running anything', async () => {
    const { code, stderr } = await benchmark(['--set', 'dataloader.nonsense=1'], [PYTHON, TUTORIAL]);
    expect(code).not.toBe(0);
    expect(stderr).toContain('unknown override "dataloader.nonsense"');
    for (const key of ['dataloader.num_workers', 'dataloader.prefetch_factor', 'dataloader.pin_memory', 'dataloader.persistent_workers', 'dataloader.batch_size', 'cudnn.benchmark', 'matmul.precision']) {
      expect(stderr).toContain(key);
    }
  });

  it('fails with torch\'s reason when an override cannot be applied to the script\'s DataLoader', async () => {
    // persistent workers need worker processes; the tutorial's loader has none.
    const { code, stderr } = await benchmark(['--steps', '3', '--repeat', '1', '--set', 'dataloader.persistent_workers=true'], [PYTHON, TUTORIAL, '--epochs', '1', '--limit', '640']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/override dataloader\.persistent_workers=true could not be applied to the DataLoader made at .*fashion_mnist_tutorial\.py:\d+: torch refused it/);
  }, 60_000);
});
