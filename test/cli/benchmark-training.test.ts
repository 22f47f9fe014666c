// Issue 11, section 2: `trainbench benchmark-training` on Fashion-MNIST (Debian's dataset-fashion-mnist), CPU.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { EngineBenchmarkResult } from '../../src-main/api/benchmark-result';
import { PHASE_NAMES } from '../../src-main/api/benchmark';
import type { TrainStepEvent } from '../../src-main/api/training';
import { RunSummarySchema } from '../../src-main/api/training';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { BenchmarkResultSchema } from '../../src-main/api/benchmark-result';
import { engineBenchmark } from '../helpers/target-detail';

const run = promisify(execFile);
const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

const WARMUP = 5;
// Long enough (a few hundred ms a repetition) that a telemetry reading on the host, which takes a core for
// milliseconds, is a small part of any window of steps: at 30 steps (35 ms) one reading moved a window by 30%.
const STEPS = 150;

describe('trainbench benchmark-training (CPU, Fashion-MNIST)', () => {
  let result: EngineBenchmarkResult;
  let events: { type: string; repetition: number; event?: TrainStepEvent }[];

  beforeAll(async () => {
    const { stdout } = await run(
      process.execPath,
      [CLI, 'benchmark-training', '--model', 'mlp', '--data', 'fashion-mnist', '--steps', String(STEPS), '--warmup-steps', String(WARMUP), '--repeat', '3', '--json', '--workspace', ws.dir],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    result = engineBenchmark(BenchmarkResultSchema.parse(JSON.parse(stdout)));
    events = readFileSync(path.join(ws.dir, result.runDir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; repetition: number; event?: TrainStepEvent });
  }, 300_000);

  it('reports both step-time figures, consistent with the step events of each repetition', () => {
    expect(result.repetitions).toHaveLength(3);
    // The wall clock covers every step, so its total always exceeds the measured steps' total. Per step it
    // is at least the steady state up to noise: a tiny MLP's warm-up on the CPU is hardly slower than its
    // steady state, and on 2 shared cores the two have been seen 0.4% apart the wrong way.
    expect(result.stepTime.wallClockMeanMs * (WARMUP + STEPS)).toBeGreaterThan(result.stepTime.steadyStateMeanMs * STEPS);
    expect(result.stepTime.wallClockMeanMs).toBeGreaterThanOrEqual(result.stepTime.steadyStateMeanMs * 0.95);
    expect(result.target.predictedEpochSeconds.fromSteadyState).toBeCloseTo((result.target.stepsPerEpoch * result.stepTime.steadyStateMeanMs) / 1000, 9);
    expect(result.target.predictedEpochSeconds.fromWallClock).toBeCloseTo((result.target.stepsPerEpoch * result.stepTime.wallClockMeanMs) / 1000, 9);
    expect(result.target.stepsPerEpoch).toBe(Math.floor(60_000 / 64));
    for (const rep of result.repetitions) {
      expect(rep.wallClockMeanMs * (WARMUP + STEPS)).toBeGreaterThan(rep.steadyStateMeanMs * STEPS);
      const steps = events.filter((e) => e.type === 'benchmark.step' && e.repetition === rep.repetition).map((e) => e.event as TrainStepEvent);
      expect(steps.at(-1)?.globalStep).toBe(WARMUP + STEPS);
      // The measured events: windows of steps wholly after the warm-up, weighted by their step count.
      let previous = 0;
      let total = 0;
      let counted = 0;
      for (const e of steps) {
        if (previous >= WARMUP) {
          total += (e.globalStep - previous) * PHASE_NAMES.reduce((s, p) => s + e.phasesMs[p], 0);
          counted += e.globalStep - previous;
        }
        previous = e.globalStep;
      }
      expect(counted).toBeGreaterThan(0);
      expect(rep.target.phaseSteps).toBe(counted);
      const eventsMean = total / counted;
      // The named phases are the step less its bookkeeping (0.96-1.01 of it measured here); the events
      // cover most, not all, measured steps, so noise on 2 shared cores gets some room.
      expect(eventsMean).toBeLessThanOrEqual(rep.steadyStateMeanMs * 1.15);
      expect(eventsMean).toBeGreaterThanOrEqual(rep.steadyStateMeanMs * 0.7);
      expect(rep.samplesPerSec).toBeCloseTo((64 * 1000) / rep.steadyStateMeanMs, 6);
    }
    const repResults = events.filter((e) => e.type === 'repetition');
    expect(repResults.map((e) => e.repetition)).toEqual([1, 2, 3]);
  });

  it('phase shares sum to 100% and other is the steady step minus the named phases', () => {
    const shares = Object.values(result.phasesPercent).reduce((a, b) => a + b, 0);
    expect(Math.abs(shares - 100)).toBeLessThanOrEqual(0.1);
    const named = PHASE_NAMES.reduce((s, p) => s + result.phasesMs[p], 0);
    expect(result.phasesMs.other).toBeGreaterThanOrEqual(0);
    if (result.namedPhasesExceedStepMs === null) expect(named + result.phasesMs.other).toBeCloseTo(result.stepTime.steadyStateMeanMs, 6);
    expect(result.phasesMs.forward).toBeGreaterThan(0);
    expect(result.phasesMs.backward).toBeGreaterThan(0);
  });

  it('gives samples/s as the median of 3 repetitions, with [min, max] as its interval and 75% as its level (issue 38)', () => {
    const ci = result.samplesPerSecCi;
    expect(result.samplesPerSec).toBe(ci.median);
    const sorted = result.repetitions.map((r) => r.samplesPerSec).sort((a, b) => a - b);
    expect(ci).toEqual({ low: sorted[0], median: sorted[1], high: sorted[2], coverage: 0.75 });
  });

  it('carries memory by kind and telemetry of the measured window', () => {
    expect(result.target.memory.measured.weights).toBeGreaterThan(0);
    expect(result.target.memory.predicted.total).toBeGreaterThan(0);
    expect(result.target.memory.device).toBe('cpu');
    expect(result.telemetry.samples).toBeGreaterThan(0);
  });

  it('gives the model FLOPs utilisation against the GEMM peak measured on this CPU, in (0, 100%], and no datasheet peak (issue 26)', () => {
    const u = result.utilisation!;
    expect(u.achievedGflops).toBeCloseTo((u.trainingFlopsPerSample * result.samplesPerSecCi.median) / 1e9, 9);
    expect(u.measured!.mfu).toBeGreaterThan(0);
    expect(u.measured!.mfu).toBeLessThanOrEqual(1);
    expect(u.measured!.how).toMatch(/^the engine's \w+ kernel on \d+ threads?, best of \d*[05](, the best this engine has measured \(this time [\d.]+ GFLOP\/s\))?$/);
    expect(u.datasheet).toBeNull();
    expect(u.problems).toEqual([]);
  });

  it('is saved as a run of kind benchmark that runs.list shows', async () => {
    const { stdout } = await run(process.execPath, [CLI, 'runs', '--json', '--workspace', ws.dir]);
    const runs = RunSummarySchema.array().parse(JSON.parse(stdout));
    const mine = runs.find((r) => r.id === result.runId);
    expect(mine?.kind).toBe('benchmark');
    expect(mine?.status).toBe('completed');
    expect(mine?.samplesPerSec).toBe(result.samplesPerSec);
  });

  it('prints a table with both step times, both epoch predictions, phases and findings', async () => {
    const { stdout } = await run(process.execPath, [CLI, 'benchmark-training', '--steps', '10', '--warmup-steps', '2', '--repeat', '2', '--workspace', ws.dir, '--no-progress']);
    expect(stdout).toMatch(/samples\/s +[\d,]+ median, 50\.0% CI \[[\d,]+, [\d,]+\] \(order statistics over 2 repetitions\)/); // 2 repetitions cover 50%, said so
    expect(stdout).toMatch(/step time +[\d.]+ ms steady-state mean \(after warm-up; samples\/s above is the repetitions' median, so batch \/ step need not equal it\); [\d.]+ ms wall-clock mean \(every step, warm-up included\)/);
    expect(stdout).toMatch(/epoch +937 steps: [\d.]+ s from the steady state, [\d.]+ s from the wall-clock mean/);
    expect(stdout).toMatch(/^ {2}other +[\d.]+ ms +[\d.]+%$/m);
    expect(stdout).toContain('Only 2 repetitions:');
    // One repetition has no interval, and says so instead of a "0.0% CI" around a single value.
    const one = await run(process.execPath, [CLI, 'benchmark-training', '--steps', '4', '--warmup-steps', '1', '--repeat', '1', '--workspace', ws.dir, '--no-progress']);
    expect(one.stdout).toMatch(/^samples\/s {2}[\d,]+, one repetition: no interval \(2 or more give one, 6 or more a 95% one\)$/m);
  }, 120_000);
});

describe('trainbench benchmark-training refuses bad flags, naming them', () => {
  const refused = async (...args: string[]) => {
    const err = (await run(process.execPath, [CLI, 'benchmark-training', '--workspace', ws.dir, ...args]).then(
      () => null,
      (e: unknown) => e,
    )) as { code: number; stderr: string } | null;
    expect(err).not.toBeNull();
    expect(err?.code).toBe(1);
    return err?.stderr ?? '';
  };

  it('--repeat 0, --steps 0 and --warmup-steps -1', async () => {
    expect(await refused('--repeat', '0')).toContain('--repeat must be an integer >= 1, got "0"');
    expect(await refused('--steps', '0')).toContain('--steps must be an integer >= 1, got "0"');
    expect(await refused('--warmup-steps', '-1')).toContain('--warmup-steps must be an integer >= 0, got "-1"');
  });

  it('a batch larger than the data drawn per epoch, before any run exists', async () => {
    const stderr = await refused('--sample-ratio', '0.001', '--batch-size', '512', '--steps', '2', '--repeat', '1');
    expect(stderr).toMatch(/^trainbench: .*batch size 512/m);
    expect(stderr).not.toMatch(/\bE_[A-Z_]+\b/);
    expect(stderr).toContain('lower the batch size or raise the sample ratio');
  }, 60_000);
});
