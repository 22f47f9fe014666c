// Issue 41 items 3 and 8: the pure parts of "a reload keeps the picture" (the live curve drawn once per step
// from whichever source has it first, the forms' values from a running job's request) and of Apply on a
// script's batch-size answer.
import { describe, expect, it } from 'vitest';

import type { BatchSearchResult } from '../../src-main/api/batch-size';
import { BatchSearchRequestSchema } from '../../src-main/api/batch-size';
import { BUILTIN_MODELS } from '../../src-main/api/model-spec';
import { OptimiseRequestSchema } from '../../src-main/api/optimise';
import type { TrainEvent } from '../../src-main/api/training';
import { TrainRequestSchema } from '../../src-main/api/training';
import { newRunValuesOf, recipeValues } from '../../src-renderer/components/runs/new-run-values';
import { batchFormOf, searchedRequestOf } from '../../src-renderer/stores/batch-size';
import { scriptBatchApplyValues, withScriptBatch } from '../../src-renderer/view-models/batch-size-apply';
import { appendStep, curveOfEvents, emptyLiveCurve } from '../../src-renderer/view-models/live-curve';
import { optimiseFormOf, optimiseFormValues } from '../../src-renderer/view-models/optimise-form';
import { emptyScriptRunForm, scriptRunFormOf } from '../../src-renderer/view-models/script-target-form';
import { scriptTrainRequest } from '../../src-renderer/components/runs/new-run-values';

const NO_CHOICES = { datasets: [], models: [] };
const step = (globalStep: number, loss: number, accuracy: number | null = null) => ({ globalStep, loss, accuracy });

describe('the live curve', () => {
  it('draws each step once and in order, whichever source brings it first', () => {
    const curve = emptyLiveCurve();
    // The run's recorded events, then the job's replay overlapping them, then live steps.
    for (const e of [step(10, 2, 0.1), step(20, 1.5, null), step(30, 1.2, 0.4)]) appendStep(curve, e);
    expect(appendStep(curve, step(20, 9))).toBe(false);
    expect(appendStep(curve, step(30, 9))).toBe(false);
    expect(appendStep(curve, step(40, 1, 0.5))).toBe(true);
    expect(curve.loss).toEqual([[10, 2], [20, 1.5], [30, 1.2], [40, 1]]);
    expect(curve.accuracy).toEqual([[10, 0.1], [30, 0.4], [40, 0.5]]);
  });

  it('puts a step that comes late (a replay behind a live step) in its place, not dropped: no line over a gap', () => {
    const curve = emptyLiveCurve();
    for (const e of [step(10, 2, 0.1), step(20, 1.5), step(50, 1.1, 0.6)]) appendStep(curve, e);
    // The replay of 30 and 40 arrives after live step 50 (seen on a loaded CI machine: 5 of 42 steps were missing).
    expect(appendStep(curve, step(40, 1.2, 0.5))).toBe(true);
    expect(appendStep(curve, step(30, 1.3))).toBe(true);
    expect(appendStep(curve, step(40, 9))).toBe(false);
    expect(appendStep(curve, step(5, 3, 0))).toBe(true);
    expect(curve.loss).toEqual([[5, 3], [10, 2], [20, 1.5], [30, 1.3], [40, 1.2], [50, 1.1]]);
    expect(curve.accuracy).toEqual([[5, 0], [10, 0.1], [40, 0.5], [50, 0.6]]);
  });

  it("starts at a run's first logged step, its epoch events left out", () => {
    const phasesMs = { data: 0, h2d: 0, forward: 1, loss: 0, backward: 1, optimizer: 0 };
    const s = (globalStep: number): TrainEvent => ({ type: 'step', epoch: 1, epochs: 1, step: globalStep, stepsPerEpoch: 100, globalStep, totalSteps: 100, loss: 1 / globalStep, accuracy: null, lr: 0.1, gradNorm: 1, samplesPerSec: 1, phasesMs });
    const events: TrainEvent[] = [s(7), s(14), { type: 'epoch', epoch: 1, epochs: 1, seconds: 1, trainLoss: 1, trainAccuracy: null }, s(21)];
    expect(curveOfEvents(events).loss.map(([x]) => x)).toEqual([7, 14, 21]);
  });
});

describe("a running job's request back into its form", () => {
  it("New run: the run's batch, epochs and optimizer, not the recipe's", () => {
    const request = TrainRequestSchema.parse({
      spec: BUILTIN_MODELS.cnn,
      data: { kind: 'example-board' },
      options: { batchSize: 32, epochs: 20, maxSteps: 7, optimizer: { kind: 'sgd', lr: 0.05 }, seed: 3, loaderWorkers: 2, prefetch: 4 },
    });
    const keep = recipeValues('mlp', { data: 'fashion-mnist', device: 'cpu' });
    expect(newRunValuesOf(request, NO_CHOICES, keep)).toEqual({
      model: 'cnn', data: 'example-board', device: 'cpu', precision: 'fp32', batchSize: 32, accumulation: 1, epochs: 20, maxSteps: 7,
      optimizer: 'sgd', lr: 0.05, loaderWorkers: 2, prefetch: 4, seed: 3,
    });
    // A spec or files given to the CLI by path: the form keeps its own model and data.
    const custom = TrainRequestSchema.parse({ spec: { ...BUILTIN_MODELS.mlp, hidden: [7] }, data: { kind: 'fashion-mnist', dir: '/x' } });
    const v = newRunValuesOf(custom, NO_CHOICES, { ...keep, model: 'cnn', data: 'example-board' });
    expect([v.model, v.data]).toEqual(['cnn', 'example-board']);
  });

  it("New run's Script target: the command, its overrides and its step bound, read back as typed", () => {
    const form = { ...emptyScriptRunForm(), commandLine: "python3 'my train.py' --x", cwd: '/w', env: [{ name: 'A', value: 'b c' }], overrides: [{ key: 'dataloader.num_workers' as const, value: '4' }], steps: 50 };
    expect(scriptRunFormOf(scriptTrainRequest(form))).toEqual(form);
    expect(scriptRunFormOf({ target: { kind: 'script', command: ['python3'], cwd: '/w' } }).steps).toBeNull();
  });

  it('Optimise: how the wizard measures and the configuration it starts from', () => {
    const request = OptimiseRequestSchema.parse({
      target: { spec: BUILTIN_MODELS.mlp, data: { kind: 'fashion-mnist' }, options: { batchSize: 48, threads: 1, memoryLimitBytes: 96 * 2 ** 20 } },
      repeat: 3, steps: 300, maxTrials: 7, batchSearch: true,
    });
    const v = optimiseFormOf(request, NO_CHOICES, optimiseFormValues('cnn', { data: 'example-board', device: 'cpu' }));
    expect(v).toMatchObject({ model: 'mlp', data: 'fashion-mnist', batchSize: 48, threads: 1, repeat: 3, steps: 300, maxTrials: 7, batchSearch: true, memoryLimitMiB: 96 });
    // Every field of the form is set from the request.
    expect(Object.keys(v).sort()).toEqual(Object.keys(optimiseFormValues('mlp', { data: 'x', device: 'cpu' })).sort());
  });

  it('Batch size: the form from a search request, and a saved run config read for its target', () => {
    const request = BatchSearchRequestSchema.parse({ spec: BUILTIN_MODELS.mlp, data: { kind: 'fashion-mnist' }, options: { memoryLimitBytes: 300 * 2 ** 20 }, headroom: 0.2, stepsPerTrial: 400 });
    expect(batchFormOf(request, NO_CHOICES, { model: 'cnn', data: 'example-board', memoryLimitMiB: 256 })).toEqual({
      model: 'mlp', data: 'fashion-mnist', device: 'cpu', memoryLimitMiB: 300, headroomPct: 20, globalBatch: null, stepsPerTrial: 400,
    });
    // An engine run keeps the cache it read beside the request.
    expect(searchedRequestOf({ ...request, cachedData: { description: 'x' } })).toEqual({ kind: 'engine', request });
    const script = searchedRequestOf({ target: { kind: 'script', command: ['python3', 't.py'], cwd: '/w', env: {} }, overrides: {}, startBatch: 16, maxBatch: 64, warmupSteps: 1, stepsPerTrial: 3, jobId: '20260101-000000-abcdef' });
    expect(script?.kind).toBe('script');
    expect(searchedRequestOf({ spec: 'nonsense' })).toBeNull();
    expect(searchedRequestOf(null)).toBeNull();
  });
});

describe("Apply on a script's batch-size answer", () => {
  const result = (recommended: number | null, kind: 'engine' | 'script' = 'script') =>
    ({ runId: 'r1', recommended, target: kind === 'script' ? { kind } : { kind, data: 'd', capacitySource: 'device', usableBytes: 1, seedBatch: 1, maxBatch: 1, globalBatch: null } }) as unknown as BatchSearchResult;
  const request = { target: { command: ['python3', 'train.py'], cwd: '/w', env: { OOM_AT: '20' } }, overrides: { 'dataloader.num_workers': 2 } };

  it('sets the batch found as the dataloader.batch_size override, beside the overrides the search kept', () => {
    const apply = scriptBatchApplyValues(request, result(19));
    expect(apply.blocked).toBeNull();
    const form = { ...emptyScriptRunForm(), commandLine: 'old', overrides: [{ key: 'dataloader.batch_size' as const, value: '8' }], warmupSteps: 9 };
    expect(withScriptBatch(form, apply.values!)).toEqual({
      ...form,
      commandLine: 'python3 train.py',
      cwd: '/w',
      env: [{ name: 'OOM_AT', value: '20' }],
      overrides: [{ key: 'dataloader.num_workers', value: '2' }, { key: 'dataloader.batch_size', value: '19' }],
    });
  });

  it('says why it cannot: no batch fitted, or an engine answer', () => {
    expect(scriptBatchApplyValues(request, result(null)).blocked).toBe('no batch fitted: there is nothing to apply');
    expect(scriptBatchApplyValues(request, result(8, 'engine')).values).toBeNull();
  });
});
