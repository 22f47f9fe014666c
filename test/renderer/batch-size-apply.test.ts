// @vitest-environment happy-dom
// Batch size (issue 27 item 5): a search's answer is applied to New run's and Optimise's forms with the model,
// data and device it was found for; the search's progress shows while a trial runs; and the Optimise form sends
// a CPU memory limit with its batch-size search, or says why the search cannot run without one.
import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';

import type { BatchSearchResult, EngineSearchDetail } from '../../src-main/api/batch-size';
import { BatchSearchRequestSchema, BatchSearchResultSchema } from '../../src-main/api/batch-size';
import { BUILTIN_MODELS } from '../../src-main/api/model-spec';
import { RECIPES } from '../../src-main/api/recipes';
import { newRunValuesFromQuery } from '../../src-renderer/components/optimise/apply-values';
import { useBatchSizeStore } from '../../src-renderer/stores/batch-size';
import { useOptimiseStore } from '../../src-renderer/stores/optimise';
import { batchApplyValues, newRunQueryOf } from '../../src-renderer/view-models/batch-size-apply';
import { batchSearchAfterDeviceChange, batchSearchBlocked, memoryLimitBytesOf, optimiseFormValues, optimiseRequest } from '../../src-renderer/view-models/optimise-form';
import { installFakeClient, ok } from './fake-client';

beforeEach(() => setActivePinia(createPinia()));

const MiB = 2 ** 20;
const memory = { weights: 1, gradients: 1, optimizerState: 1, activations: 1, activationGrads: 1, batchData: 1, workspace: 1, total: 7 };
const trial = (index: number, batchSize: number) => ({
  index, batchSize, accumulation: 1, outcome: 'ok' as const, samplesPerSec: 1000, peakBytes: 1024, fits: true, seconds: 1, message: null,
  target: { kind: 'engine' as const, predicted: memory, memoryBeforeBytes: 0, memoryAfterBytes: 0, backAtBaseline: true },
});
function result(over: Partial<BatchSearchResult> = {}, engine: Partial<EngineSearchDetail> = {}): BatchSearchResult {
  return BatchSearchResultSchema.parse({
    runId: 'bs-run', runDir: 'runs/bs-run', title: 'cnn on fashion-mnist', device: 'cpu', capacityBytes: 128 * MiB, headroom: 0.1, largestFitting: 512, recommended: 256,
    trials: [trial(0, 256), trial(1, 512)], verdict: 'batch 512 fits with 10% headroom; use 256', seconds: 9,
    target: { kind: 'engine', data: 'fashion-mnist', capacitySource: 'memory-limit', usableBytes: 115 * MiB, seedBatch: 256, maxBatch: 60000, globalBatch: null, ...engine },
    ...over,
  });
}
// As the area asks: the model's recipe (AdamW at 0.003 for batch 64) on the CPU under a limit.
/** The forms' model choices beyond the built-ins: none here (the sized and file cases: models-sized-forms.test.ts). */
const builtinsOnly = { datasets: [], models: [] };
const cnnOnFashion = BatchSearchRequestSchema.parse({ spec: BUILTIN_MODELS.cnn, data: { kind: 'fashion-mnist' }, options: { ...RECIPES.cnn, device: 'cpu', memoryLimitBytes: 128 * MiB } });

describe('Apply of a batch-size search', () => {
  it('takes the recommended batch with the model, data, device and CPU memory limit it was found for, and the LR scaled with it', () => {
    expect(batchApplyValues(cnnOnFashion, result(), builtinsOnly)).toEqual({
      values: { runId: 'bs-run', model: 'cnn', family: 'cnn', data: 'fashion-mnist', device: 'cpu', batchSize: 256, accumulation: 1, memoryLimitMiB: 128, lr: 0.012 },
      blocked: null,
    });
    // The batch the LR was tuned for keeps it.
    expect(batchApplyValues(cnnOnFashion, result({ recommended: 64 }), builtinsOnly).values?.lr).toBeNull();
    // On a GPU there is no limit to carry; a dataset of the workspace stays the same choice.
    const gpu = batchApplyValues({ ...cnnOnFashion, data: { kind: 'dataset', train: 'ds1' } }, result({ device: 'cuda:0', capacityBytes: 8 * 2 ** 30 }, { capacitySource: 'device' }), builtinsOnly);
    expect(gpu.values).toMatchObject({ data: 'dataset:ds1', device: 'cuda:0', memoryLimitMiB: null });
  });

  it('takes a global batch as its micro-batch and accumulation', () => {
    const split = batchApplyValues(cnnOnFashion, result({}, { globalBatch: { global: 1024, microBatch: 256, accumulation: 4, samplesPerSec: 900 } }), builtinsOnly);
    expect(split.values).toMatchObject({ batchSize: 256, accumulation: 4, lr: 0.048 });
  });

  it('says why it cannot apply: no batch fitted, or a model the forms cannot choose', () => {
    expect(batchApplyValues(cnnOnFashion, result({ recommended: null, largestFitting: null }), builtinsOnly)).toEqual({ values: null, blocked: 'no batch fitted: there is nothing to apply' });
    const own = { ...cnnOnFashion, spec: { ...cnnOnFashion.spec, dropout: 0.5 } } as typeof cnnOnFashion;
    expect(batchApplyValues(own, result(), builtinsOnly).blocked).toMatch(/^the model \(its own cnn spec\) is neither a built-in/);
  });

  it('opens New run with the batch and says where the settings came from', () => {
    const { values } = batchApplyValues(cnnOnFashion, result(), builtinsOnly);
    const back = newRunValuesFromQuery(newRunQueryOf(values!));
    expect(back?.values).toMatchObject({ model: 'cnn', data: 'fashion-mnist', device: 'cpu', batchSize: 256, accumulation: 1, lr: 0.012, optimizer: 'adamw' });
    expect(back?.source).toBe('batch-size search bs-run');
    expect(back?.notes).toEqual([]);
    // An optimisation's link reads as before.
    expect(newRunValuesFromQuery({ new: '1', from: 'opt-1' })?.source).toBe('optimisation opt-1');
  });

  it("fills Optimise's form and keeps how the wizard measures; its request carries the memory limit", () => {
    const optimise = useOptimiseStore();
    optimise.form = { ...optimise.form, repeat: 7, maxTrials: 3 };
    const { values } = batchApplyValues(cnnOnFashion, result(), builtinsOnly);
    expect(optimise.applyBatchSearch(values!)).toBe(true);
    expect(optimise.form).toMatchObject({ model: 'cnn', data: 'fashion-mnist', device: 'cpu', batchSize: 256, accumulation: 1, memoryLimitMiB: 128, repeat: 7, maxTrials: 3, batchSearch: true });
    expect(optimise.applied).toBe('batch-size search bs-run');
    expect(optimiseRequest(optimise.form).request?.target.options).toMatchObject({ batchSize: 256, memoryLimitBytes: 128 * MiB });
  });
});

describe('the Optimise form on the CPU', () => {
  // The search ticked by a person: a form opens on the CPU with it unticked (below).
  const cpu = { ...optimiseFormValues('mlp', { data: 'fashion-mnist', device: 'cpu' }), batchSearch: true };

  it('opens with the search unticked on the CPU and ticked on a GPU, so no form opens with its warning', () => {
    const opened = optimiseFormValues('mlp', { data: 'fashion-mnist', device: 'cpu' });
    expect(opened.batchSearch).toBe(false);
    expect(batchSearchBlocked(opened)).toBeNull();
    expect(optimiseFormValues('mlp', { data: 'fashion-mnist', device: 'cuda:0' }).batchSearch).toBe(true);
  });

  it('follows a change of device while the box holds the default, and keeps a person\'s own choice', () => {
    const untouched = { batchSearch: false, memoryLimitMiB: null };
    expect(batchSearchAfterDeviceChange(untouched, 'cpu', 'cuda:0')).toBe(true);
    expect(batchSearchAfterDeviceChange({ ...untouched, batchSearch: true }, 'cuda:0', 'cpu')).toBe(false);
    expect(batchSearchAfterDeviceChange({ ...untouched, batchSearch: true }, 'cuda:0', 'cuda:1')).toBe(true);
    // Ticked on the CPU, or a limit typed: the person's.
    expect(batchSearchAfterDeviceChange({ ...untouched, batchSearch: true }, 'cpu', 'cuda:0')).toBe(true);
    expect(batchSearchAfterDeviceChange({ batchSearch: true, memoryLimitMiB: 512 }, 'cuda:0', 'cpu')).toBe(true);
    expect(batchSearchAfterDeviceChange({ ...untouched, batchSearch: false }, 'cuda:0', 'cpu')).toBe(false);
  });

  it('sends the memory limit only with the search ticked on the CPU', () => {
    expect(optimiseRequest({ ...cpu, memoryLimitMiB: 256 }).request?.target.options.memoryLimitBytes).toBe(256 * MiB);
    expect(memoryLimitBytesOf({ ...cpu, memoryLimitMiB: 256, batchSearch: false })).toBe(0);
    // A GPU's own memory is its limit (the search refuses a limit there).
    expect(optimiseRequest({ ...cpu, device: 'cuda:0', memoryLimitMiB: 256 }).request?.target.options.memoryLimitBytes).toBe(0);
  });

  it('says why the search cannot run without a limit, and refuses a bad one beside its field', () => {
    expect(cpu.memoryLimitMiB).toBeNull();
    expect(batchSearchBlocked(cpu)).toMatch(/^the batch-size search cannot run on the CPU without a memory limit/);
    expect(batchSearchBlocked({ ...cpu, memoryLimitMiB: 64 })).toBeNull();
    expect(batchSearchBlocked({ ...cpu, batchSearch: false })).toBeNull();
    expect(batchSearchBlocked({ ...cpu, device: 'cuda:0' })).toBeNull();
    expect(optimiseRequest({ ...cpu, memoryLimitMiB: -4 }).errors?.memoryLimitMiB).toBe('must be at least 0 (-4 given)');
  });
});

describe('the Batch size store while a search runs', () => {
  it('shows its progress from the first event, and Apply once it answers', async () => {
    let finish: (r: unknown) => void = () => undefined;
    const fake = installFakeClient((m) => (m === 'batchSize.search' ? new Promise((resolve) => (finish = (r) => resolve(ok(r)))) : ok([])));
    const store = useBatchSizeStore();
    store.form = { ...store.form, model: 'cnn', memoryLimitMiB: 128 };
    const done = store.start();
    await expect.poll(() => store.jobId).not.toBeNull();
    const id = store.jobId!;
    fake.emit('batchSize.progress', { jobId: id, phase: 'preparing', trial: null, step: 0, steps: 5, elapsedSeconds: 0, trialSeconds: 0 });
    expect(store.progress?.phase).toBe('preparing');
    fake.emit('batchSize.progress', { jobId: 'another', phase: 'trial', trial: { index: 3, batchSize: 9, accumulation: 1 }, step: 0, steps: 5, elapsedSeconds: 1, trialSeconds: 0 });
    fake.emit('batchSize.progress', { jobId: id, phase: 'trial', trial: { index: 0, batchSize: 256, accumulation: 1 }, step: 2, steps: 5, elapsedSeconds: 4, trialSeconds: 3 });
    expect(store.progress).toMatchObject({ phase: 'trial', trial: { index: 0, batchSize: 256 }, step: 2 });
    expect(store.result).toBeNull();
    finish(result());
    await done;
    expect(store.progress).toBeNull();
    expect(batchApplyValues(store.request!, store.result!, builtinsOnly).values).toMatchObject({ model: 'cnn', data: 'fashion-mnist', device: 'cpu', batchSize: 256, memoryLimitMiB: 128, lr: 0.012 });
    // It searched with the model's recipe (its optimizer's state is part of the memory), as the CLI does.
    const sent = fake.calls.find((c) => c.method === 'batchSize.search')?.params as { options: { optimizer: { kind: string }; batchSize: number } };
    expect(sent.options).toMatchObject({ optimizer: { kind: 'adamw', lr: 0.003 }, batchSize: 64 });
  });
});
