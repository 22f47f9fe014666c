// Issue 11, section 2: the training benchmark through the contract (benchmark.training / benchmark.cancel),
// on the real engine host and Fashion-MNIST: progress events, cancel, and what a run keeps.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { BenchmarkProgress } from '../../src-main/api/benchmark';
import type { EngineBenchmarkResult } from '../../src-main/api/benchmark-result';
import { BUILTIN_MODELS } from '../../src-main/api/model-spec';
import { parseRunRecord } from '../../src-main/api/run-record';
import type { Services } from '../../src-main/core/services';
import { testServices } from '../helpers/services';

let services: Services;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ services, cleanup } = await testServices());
}, 60_000);
afterAll(async () => cleanup?.());

const request = (extra: object) => ({ spec: BUILTIN_MODELS.mlp, data: { kind: 'fashion-mnist' }, ...extra });
const runFolders = () => (existsSync(services.workspace.resolve('runs')) ? readdirSync(services.workspace.resolve('runs')) : []);

function progressOf(jobId: string): BenchmarkProgress[] {
  const seen: BenchmarkProgress[] = [];
  services.events.subscribe((name, data) => {
    if (name === 'benchmark.progress' && (data as BenchmarkProgress).jobId === jobId) seen.push(data as BenchmarkProgress);
  });
  return seen;
}

describe('benchmark.training', () => {
  it('streams progress per repetition and keeps a run with no checkpoint and no evaluation', async () => {
    const seen = progressOf('svc-bench-1');
    const r = (await services.router.dispatch('benchmark.training', request({ steps: 20, warmupSteps: 2, repeat: 2, jobId: 'svc-bench-1' }))) as EngineBenchmarkResult;
    // The MLP's own optimizer (its recipe's), as `trainbench train` uses: the update is part of the step.
    expect(r.target.optimizer).toBe('adamw');
    expect(seen[0]).toMatchObject({ phase: 'preparing', runId: null, repetitions: 2, totalSteps: 22 });
    const done = seen.filter((p) => p.phase === 'repetition-done');
    expect(done.map((p) => p.repetition)).toEqual([1, 2]);
    expect(done.map((p) => p.samplesPerSec)).toEqual(r.repetitions.map((x) => x.samplesPerSec));
    expect(seen.filter((p) => p.phase === 'measuring').every((p) => p.runId === r.runId && p.step > 2)).toBe(true);

    const dir = services.workspace.resolve(r.runDir);
    expect(readdirSync(dir).sort()).toEqual(['events.jsonl', 'run.json', 'telemetry-rep1.jsonl', 'telemetry-rep2.jsonl']);
    const parsed = parseRunRecord(readFileSync(path.join(dir, 'run.json'), 'utf8'));
    expect(parsed.record).toMatchObject({ kind: 'benchmark', status: 'completed', result: { runId: r.runId, samplesPerSec: r.samplesPerSec } });
    const lines = readFileSync(path.join(dir, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; event?: { type: string; testLoss?: number } });
    // No test set is given to the engine: nothing is evaluated inside the measured steps.
    expect(lines.filter((l) => l.type === 'repetition')).toHaveLength(2);
    expect(lines.every((l) => l.type === 'repetition' || l.type === 'benchmark.step')).toBe(true);
  }, 120_000);

  it('steps with the optimizer the request names', async () => {
    const r = (await services.router.dispatch('benchmark.training', request({ steps: 3, warmupSteps: 1, repeat: 1, options: { optimizer: { kind: 'sgd' } } }))) as EngineBenchmarkResult;
    expect(r.target.optimizer).toBe('sgd');
  }, 60_000);

  it('refuses bad parameters at the contract, naming them, and leaves no run', async () => {
    const before = runFolders().length;
    for (const [params, field] of [
      [{ repeat: 0 }, 'repeat'],
      [{ steps: 0 }, 'steps'],
      [{ warmupSteps: -1 }, 'warmupSteps'],
      [{ options: { epochs: 3 } }, 'epochs'],
    ] as const) {
      // The router checks every request against its schema (E_BAD_REQUEST names the field) ...
      await expect(services.router.dispatch('benchmark.training', request(params))).rejects.toMatchObject({ code: 'E_BAD_REQUEST', message: expect.stringContaining(field) });
    }
    // ... and the engine refuses what it cannot run before a run exists.
    await expect(services.router.dispatch('benchmark.training', request({ options: { device: 'cuda:99' } }))).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringContaining('cuda:99') });
    expect(runFolders().length).toBe(before);
  }, 60_000);

  it('cancels at the next step: the call fails with E_CANCELLED and the run is kept as cancelled', async () => {
    const seen = progressOf('svc-bench-cancel');
    const running = services.router.dispatch('benchmark.training', request({ steps: 1_000_000, warmupSteps: 1, repeat: 3, jobId: 'svc-bench-cancel' }));
    const outcome = running.then(
      () => null,
      (err: unknown) => err as { code: string; message: string },
    );
    await expect.poll(() => seen.some((p) => p.phase === 'measuring'), { timeout: 30_000 }).toBe(true);
    await expect(services.router.dispatch('jobs.cancel', { jobId: 'svc-bench-cancel' })).resolves.toEqual({ cancelled: true });
    const err = await outcome;
    expect(err?.code).toBe('E_CANCELLED');
    expect(err?.message).toMatch(/^the benchmark was cancelled in repetition 1 of 3, at step [\d,]+ of its 1,000,001$/);
    const runId = seen.find((p) => p.runId)?.runId as string;
    const parsed = parseRunRecord(readFileSync(services.workspace.resolve(path.join('runs', runId, 'run.json')), 'utf8'));
    expect(parsed.record).toMatchObject({ kind: 'benchmark', status: 'cancelled', error: { code: 'E_CANCELLED' } });
    // Nothing is left running: a second cancel finds no job.
    await expect(services.router.dispatch('jobs.cancel', { jobId: 'svc-bench-cancel' })).resolves.toEqual({ cancelled: false });
  }, 60_000);
});
