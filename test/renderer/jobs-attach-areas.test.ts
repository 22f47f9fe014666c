// @vitest-environment happy-dom
// A job outlives its page, in every area (issue 25): a window that opens while a benchmark, a batch-size search,
// an optimisation or a dataset build runs (of the engine or of a script) re-attaches to it: its events so far are
// replayed, live ones follow (another job's are not taken), Cancel goes through jobs.cancel, and its end arrives.
import { mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';
import { effectScope } from 'vue';

import { BenchmarkOptionsSchema } from '../../src-main/api/benchmark';
import { OptimiseConfigSchema, WizardStateSchema } from '../../src-main/api/optimise';
import { optimiseFormValues, optimiseRequest } from '../../src-renderer/view-models/optimise-form';
import { useImportWizard } from '../../src-renderer/composables/useImportWizard';
import { useBatchSizeStore } from '../../src-renderer/stores/batch-size';
import { useBenchmarksStore } from '../../src-renderer/stores/benchmarks';
import { useDatasetsStore } from '../../src-renderer/stores/datasets';
import { useJobsStore } from '../../src-renderer/stores/jobs';
import { useOptimiseStore } from '../../src-renderer/stores/optimise';
import BatchSizeView from '../../src-renderer/views/BatchSizeView.vue';
import type { Answer, FakeClient } from './fake-client';
import { fail, installFakeClient, ok } from './fake-client';

beforeEach(() => setActivePinia(createPinia()));

const ID = '20261127-050000-abcdef';
const OTHER = '20261127-050001-012345';
const STARTED_AT = '2026-11-27T05:00:00.000Z';
const target = { kind: 'script', command: ['python3', 'train.py'], cwd: '/home/me/proj', env: {} };

/** A job as jobs.list describes it, with its recorded events. */
function job(method: string, kind: string, jobTarget: string | null, request: Record<string, unknown>, events: [string, unknown][]) {
  return { jobId: ID, method, kind, target: jobTarget, request, startedAt: STARTED_AT, cancelling: false, events: events.map(([event, data]) => ({ event, data })) };
}

/**
 * The workbench with one job running: jobs.list lists it, jobs.cancel stops it; `answer` answers the area's own
 * calls (an empty list for runs.list and datasets.list unless it says otherwise).
 */
function workbench(info: ReturnType<typeof job>, answer: Answer = () => ok({})): FakeClient {
  const fake = installFakeClient((m, p) => {
    if (m === 'jobs.list') return ok([info]);
    if (m === 'jobs.cancel') return ok({ cancelled: true });
    if (m === 'runs.list' || m === 'datasets.list') return ok([]);
    return answer(m, p);
  });
  useJobsStore().start();
  return fake;
}

/** The job's end, as the main process announces it to every window. */
function end(fake: FakeClient, info: ReturnType<typeof job>, outcome: { result: unknown } | { error: { code: string; message: string } }): void {
  fake.emit('jobs.ended', { jobId: info.jobId, method: info.method, kind: info.kind, target: info.target, ok: 'result' in outcome, ...outcome });
}

/** Cancel from the area reached jobs.cancel with the job's id (never the old per-area cancel methods). */
function cancelledThroughJobs(fake: FakeClient): void {
  expect(fake.calls.filter((c) => c.method.endsWith('.cancel'))).toEqual([{ method: 'jobs.cancel', params: { jobId: ID } }]);
}

const callsAfter = (fake: FakeClient, method: string, after: string) => fake.calls.slice(fake.calls.findIndex((c) => c.method === after)).filter((c) => c.method === method).length;

const benchProgress = (jobId: string, step: number) => ({
  jobId, target: 'engine', runId: 'bench-run', phase: 'measuring', repetition: 1, repetitions: 3, step, totalSteps: 153, warmupSteps: 3, steps: 150, samplesPerSec: null,
});
const memory = { weights: 1, gradients: 1, optimizerState: 1, activations: 1, activationGrads: 1, batchData: 1, workspace: 1, total: 7 };
const batchTrial = (index: number, batchSize: number) => ({
  index, batchSize, accumulation: 1, outcome: 'ok', samplesPerSec: 1000 * (index + 1), peakBytes: 1024, fits: true, seconds: 1, message: null,
  target: { kind: 'engine', predicted: memory, memoryBeforeBytes: 0, memoryAfterBytes: 0, backAtBaseline: true },
});
const scriptTrial = (index: number, batchSize: number) => ({
  index, batchSize, accumulation: 1, outcome: 'ok', samplesPerSec: 500, peakBytes: null, fits: true, seconds: 2, message: null, target: { kind: 'script' },
});
const output = (jobId: string, line: string, runId: string | null = 'script-run') => ({ jobId, runId, repetition: 1, stream: 'stdout', line });
const optimiseTrial = (index: number) => ({
  index, change: { knob: 'loaderWorkers', from: 0, to: 2, kind: 'pipeline', label: `loader workers 0 -> ${2 * index}`, hypothesis: 'data wait is 63% of the step', note: null },
  decision: 'reject', why: 'the whole CI is below 1', speedup: { low: 0.9, median: 0.95, high: 0.99 }, bestSamplesPerSec: [100, 101], candidateSamplesPerSec: [95, 96],
  lossDelta: 0, kept: false, seconds: 3, error: null,
});
const optimiseProgress = (jobId: string, trial: number, finished: number | null, runId = 'optimise-run') => ({
  jobId, target: runId === 'so-run' ? 'script' : 'engine', runId, phase: 'trial', trial, maxTrials: 4, repetition: 1, repetitions: 6, label: 'loader workers 0 -> 2', elapsedSeconds: 30, etaSeconds: 60,
  finishedTrial: finished === null ? null : optimiseTrial(finished),
});

describe('a job that outlives its page, in every area', () => {
  it('Benchmarks (engine): a running training benchmark is re-attached with its progress, cancelled through jobs.cancel, and the list is read when it ends', async () => {
    const info = job('benchmark.training', 'benchmark', 'engine', { jobId: ID, steps: 150 }, [
      ['benchmark.progress', benchProgress(ID, 10)],
      ['benchmark.progress', benchProgress(ID, 20)],
    ]);
    const fake = workbench(info);
    const store = useBenchmarksStore();
    await expect.poll(() => store.progress?.step).toBe(20);
    expect(store.running).toBe(true);
    expect(store.attached).toBe(true);
    fake.emit('benchmark.progress', benchProgress(OTHER, 99));
    fake.emit('benchmark.progress', benchProgress(ID, 21));
    expect(store.progress?.step).toBe(21);
    await store.cancel();
    cancelledThroughJobs(fake);
    expect(store.cancelling).toBe(true);
    end(fake, info, { error: { code: 'E_CANCELLED', message: 'training was cancelled at step 21' } });
    await expect.poll(() => store.running).toBe(false);
    // Said after the list is read again (which clears the list's own error).
    await expect.poll(() => store.error).toBe('training was cancelled at step 21');
    expect(store.progress).toBeNull();
    expect(callsAfter(fake, 'runs.list', 'jobs.cancel')).toBe(1);
    expect(useJobsStore().live).toEqual([]);
  });

  it('Benchmarks (script): the output so far is replayed, live lines follow, Cancel goes through jobs.cancel', async () => {
    const request = { jobId: ID, target: { ...target, command: ['torchrun', '--nnodes', '2', 'train.py'] }, warmupSteps: 3, steps: 40, repeat: 2, collectives: true, collector: { host: '10.0.0.1', port: 29400 } };
    const info = job('benchmark.training', 'benchmark', 'script', request, [
      ['script.output', output(ID, 'epoch 1')],
      ['script.join', { jobId: ID, code: 'tbf1.abc' }],
      ['script.output', output(ID, 'epoch 2')],
    ]);
    const fake = workbench(info);
    const store = useBenchmarksStore().script;
    await expect.poll(() => store.output.map((l) => l.line)).toEqual(['epoch 1', 'epoch 2']);
    // The form shows what runs, the address of the job across machines and its join code included.
    expect(store.form).toMatchObject({ commandLine: 'torchrun --nnodes 2 train.py', cwd: '/home/me/proj', warmupSteps: 3, steps: 40, repeat: 2, collectives: true, collector: '10.0.0.1:29400' });
    expect(store.join).toBe('tbf1.abc');
    expect(store.running).toBe(true);
    expect(store.jobId).toBe(ID);
    fake.emit('script.output', output(OTHER, 'not this job'));
    fake.emit('script.output', output(ID, 'epoch 3'));
    expect(store.output.map((l) => [l.n, l.line])).toEqual([[1, 'epoch 1'], [2, 'epoch 2'], [3, 'epoch 3']]);
    await store.cancel();
    cancelledThroughJobs(fake);
    end(fake, info, { error: { code: 'E_CANCELLED', message: 'the script benchmark was cancelled' } });
    await expect.poll(() => store.running).toBe(false);
    expect(store.error).toBe('the script benchmark was cancelled');
    expect(store.forbidden).toBeNull();
  });

  it('Batch size (engine): the trials so far are replayed, live ones follow, and its answer is shown when it ends', async () => {
    const info = job('batchSize.search', 'batchSize', 'engine', { jobId: ID }, [
      ['batchSize.trial', { jobId: ID, runId: 'bs-run', trial: batchTrial(0, 64) }],
      ['batchSize.trial', { jobId: ID, runId: 'bs-run', trial: batchTrial(1, 128) }],
    ]);
    const fake = workbench(info);
    const store = useBatchSizeStore();
    await expect.poll(() => store.trials.map((t) => t.batchSize)).toEqual([64, 128]);
    expect(store.running).toBe(true);
    expect(store.jobId).toBe(ID);
    fake.emit('batchSize.trial', { jobId: OTHER, runId: 'x', trial: batchTrial(9, 9) });
    fake.emit('batchSize.trial', { jobId: ID, runId: 'bs-run', trial: batchTrial(2, 256) });
    expect(store.trials.map((t) => t.batchSize)).toEqual([64, 128, 256]);
    await store.cancel();
    cancelledThroughJobs(fake);
    // The search had finished its last trial when Cancel arrived: it ends with its answer.
    const result = {
      runId: 'bs-run', runDir: 'runs/bs-run', title: 'mlp on fashion-mnist', device: 'cpu', capacityBytes: 2 ** 28, headroom: 0.1, largestFitting: 256, recommended: 256,
      trials: [batchTrial(0, 64), batchTrial(1, 128), batchTrial(2, 256), batchTrial(3, 512)], verdict: 'batch 256 fits with 10% headroom', seconds: 12,
      target: { kind: 'engine', data: 'fashion-mnist', capacitySource: 'memory-limit', usableBytes: 0.9 * 2 ** 28, seedBatch: 128, maxBatch: 60000, globalBatch: null },
    };
    end(fake, info, { result });
    await expect.poll(() => store.running).toBe(false);
    expect(store.error).toBeNull();
    expect(store.result?.verdict).toBe('batch 256 fits with 10% headroom');
    expect(store.trials.map((t) => t.batchSize)).toEqual([64, 128, 256, 512]);
  });

  it('Batch size (script): trials and output are replayed into the area, which switches to the Script target, with Cancel', async () => {
    const info = job('batchSize.search', 'batchSize', 'script', { jobId: ID, target }, [
      ['script.output', output(ID, 'batch 16 ok')],
      ['batchSize.trial', { jobId: ID, runId: 'sbs-run', trial: scriptTrial(0, 16) }],
    ]);
    const fake = workbench(info);
    // The chart needs a canvas renderer happy-dom does not have; the table says the same.
    const view = mount(BatchSizeView, { global: { stubs: { BatchSizeChart: true } } });
    const store = useBatchSizeStore().script;
    await expect.poll(() => store.trials.map((t) => t.batchSize)).toEqual([16]);
    expect(store.output.map((l) => l.line)).toEqual(['batch 16 ok']);
    await expect.poll(() => view.find('[data-testid="script-batch-search"]').exists()).toBe(true);
    expect((view.get('[data-testid="target-script"]').element as HTMLInputElement).checked).toBe(true);
    expect(view.get('[data-testid="sbs-running"]').text()).toBe('searching… 1 trial(s) so far');
    fake.emit('batchSize.trial', { jobId: OTHER, runId: 'x', trial: scriptTrial(5, 999) });
    fake.emit('batchSize.trial', { jobId: ID, runId: 'sbs-run', trial: scriptTrial(1, 32) });
    await expect.poll(() => view.get('[data-testid="sbs-running"]').text()).toBe('searching… 2 trial(s) so far');
    await view.get('[data-testid="sbs-cancel"]').trigger('click');
    await expect.poll(() => fake.calls.some((c) => c.method === 'jobs.cancel')).toBe(true);
    cancelledThroughJobs(fake);
    end(fake, info, { error: { code: 'E_CANCELLED', message: 'the batch-size search was cancelled during the trial at batch 64' } });
    await expect.poll(() => view.find('[data-testid="sbs-error"]').exists()).toBe(true);
    expect(view.get('[data-testid="sbs-error"]').text()).toBe('the batch-size search was cancelled during the trial at batch 64');
    expect(view.find('[data-testid="sbs-running"]').exists()).toBe(false);
    expect(store.trials.map((t) => t.batchSize)).toEqual([16, 32]);
    view.unmount();
  });

  it('Optimise (engine): the wizard shows its trials so far (from its progress events and its saved state), then live ones, and Cancel stops it', async () => {
    const request = optimiseRequest(optimiseFormValues('mlp', { data: 'fashion-mnist', device: 'cpu' }), ID).request!;
    const state = WizardStateSchema.parse({
      schemaVersion: 2, jobId: ID, request, status: 'running', runIds: ['optimise-run'], baseline: null, diagnosis: null, limits: null,
      best: OptimiseConfigSchema.parse({ options: BenchmarkOptionsSchema.parse({}), readFrom: 'cache' }), trials: [optimiseTrial(1)], skipped: [], batchSearch: null,
      exhausted: [], final: null, message: null, updatedAt: STARTED_AT, seconds: 30,
    });
    let status: 'running' | 'cancelled' = 'running';
    const info = job('optimise.start', 'optimise', 'engine', request, [
      ['optimise.progress', optimiseProgress(ID, 1, null)],
      ['optimise.progress', optimiseProgress(ID, 2, 1)],
    ]);
    const fake = workbench(info, (m) => (m === 'optimise.state' ? ok({ ...state, status }) : fail('E_BAD_INPUT', `no ${m} here`)));
    const store = useOptimiseStore();
    await expect.poll(() => store.trials.map((t) => t.index)).toEqual([1]);
    expect(store.running).toBe(true);
    expect(store.watching).toBe(false);
    expect(store.jobId).toBe(ID);
    expect(store.progress?.trial).toBe(2);
    await expect.poll(() => store.state?.status).toBe('running');
    fake.emit('optimise.progress', optimiseProgress(OTHER, 3, 2));
    fake.emit('optimise.progress', optimiseProgress(ID, 3, 2));
    expect(store.trials.map((t) => t.index)).toEqual([1, 2]);
    await store.cancel();
    cancelledThroughJobs(fake);
    status = 'cancelled';
    end(fake, info, { error: { code: 'E_CANCELLED', message: `optimisation cancelled after 2 trials; it can be resumed (Resume in the Optimise area, or trainbench optimise --resume ${ID})` } });
    await expect.poll(() => store.running).toBe(false);
    expect(store.cancelled).toBe(true);
    await expect.poll(() => store.error).toBe('Cancelled after 2 trials. The baseline and every finished trial are kept: Resume in the list below goes on from there (a trial that was running is measured again).');
    await expect.poll(() => store.state?.status).toBe('cancelled');
    // The past list is read again when it ends.
    expect(callsAfter(fake, 'runs.list', 'jobs.cancel')).toBe(1);
  });

  it('Optimise (engine), resumed: its job names only the wizard, so the form shows the request from its saved state', async () => {
    const request = optimiseRequest({ ...optimiseFormValues('mlp', { data: 'fashion-mnist', device: 'cpu' }), maxTrials: 7, repeat: 4 }, ID).request!;
    const state = WizardStateSchema.parse({
      schemaVersion: 2, jobId: ID, request, status: 'running', runIds: ['optimise-run'], baseline: null, diagnosis: null, limits: null,
      best: OptimiseConfigSchema.parse({ options: BenchmarkOptionsSchema.parse({}), readFrom: 'cache' }), trials: [optimiseTrial(1)], skipped: [], batchSearch: null,
      exhausted: [], final: null, message: null, updatedAt: STARTED_AT, seconds: 30,
    });
    const info = job('optimise.resume', 'optimise', 'engine', { jobId: ID }, [['optimise.progress', optimiseProgress(ID, 2, 1)]]);
    workbench(info, (m) => (m === 'optimise.state' ? ok(state) : fail('E_BAD_INPUT', `no ${m} here`)));
    const store = useOptimiseStore();
    await expect.poll(() => store.running).toBe(true);
    await expect.poll(() => store.attachedRequest).toEqual(request);
    expect(store.attachedRequest?.maxTrials).toBe(7);
  });

  it('Optimise (script): the command, its output and its trials so far are shown, then live ones, and Cancel stops it', async () => {
    const request = { target, overrides: {}, preset: 'balanced', repeat: 2, steps: 4, warmupSteps: 1, maxTrials: 3, allowRecipeChanges: false, timeoutSeconds: 600, jobId: ID };
    const info = job('optimise.start', 'optimise', 'script', request, [
      ['script.output', output(ID, 'loader num_workers=0', 'so-run')],
      ['optimise.progress', optimiseProgress(ID, 2, 1, 'so-run')],
    ]);
    const fake = workbench(info, (m) => fail('E_BAD_INPUT', `no ${m} here`));
    const store = useOptimiseStore().script;
    await expect.poll(() => store.trials.map((t) => t.index)).toEqual([1]);
    expect(store.running).toBe(true);
    expect(store.jobId).toBe(ID);
    expect(store.started?.target.command).toEqual(['python3', 'train.py']);
    expect(store.form.commandLine).toBe('python3 train.py');
    expect(store.wizard.maxTrials).toBe(3);
    expect(store.output.map((l) => l.line)).toEqual(['loader num_workers=0']);
    fake.emit('script.output', output(OTHER, 'another job', 'x'));
    fake.emit('script.output', output(ID, 'loader num_workers=2', 'so-run'));
    fake.emit('optimise.progress', optimiseProgress(ID, 3, 2, 'so-run'));
    expect(store.output.map((l) => l.line)).toEqual(['loader num_workers=0', 'loader num_workers=2']);
    expect(store.trials.map((t) => t.index)).toEqual([1, 2]);
    await store.cancel();
    cancelledThroughJobs(fake);
    end(fake, info, { error: { code: 'E_CANCELLED', message: 'the script optimisation was cancelled after 2 finished trials' } });
    await expect.poll(() => store.running).toBe(false);
    expect(store.cancelled).toBe(true);
    expect(store.error).toBe('the script optimisation was cancelled after 2 finished trials');
    // Its run is read back when it ends.
    expect(fake.calls.filter((c) => c.method === 'runs.get').map((c) => c.params)).toEqual([{ id: 'so-run' }]);
  });

  it('Datasets: a running build takes the import wizard to its step with its progress and Cancel; what it built is shown and listed', async () => {
    const progress = (jobId: string, records: number) => ({
      jobId, phase: 'reading', records, recordsTotal: 4000, bytesWritten: records * 64, bytesTotal: 256000, bytesPerSec: 1e6, etaSeconds: 2,
    });
    const info = job('datasets.build', 'dataset', null, { jobId: ID, name: 'small', source: { kind: 'npy', path: '/w/sources/small.npy' } }, [
      ['datasets.progress', progress(ID, 1000)],
    ]);
    const fake = workbench(info);
    const scope = effectScope();
    const wizard = scope.run(() => useImportWizard())!;
    const datasets = useDatasetsStore();
    await expect.poll(() => wizard.progress.value?.records).toBe(1000);
    expect(wizard.step.value).toBe('build');
    expect(wizard.name.value).toBe('small');
    expect(wizard.busy.value).toBe(true);
    fake.emit('datasets.progress', progress(OTHER, 3999));
    fake.emit('datasets.progress', progress(ID, 2000));
    expect(wizard.progress.value?.records).toBe(2000);
    await wizard.cancel();
    cancelledThroughJobs(fake);
    expect(datasets.buildCancelling).toBe(true);
    // The build had published before Cancel arrived.
    const dataset = { id: 'small-0123456789ab', name: 'small', records: 4000, bytes: 256000, shards: 1, fields: [], createdAt: STARTED_AT, sourceDescription: 'small.npy', problem: null };
    end(fake, info, { result: { dataset, hit: false, seconds: 3, dir: `datasets/${dataset.id}` } });
    await expect.poll(() => wizard.busy.value).toBe(false);
    expect(wizard.built.value?.dataset.id).toBe('small-0123456789ab');
    expect(wizard.error.value).toBeNull();
    expect(callsAfter(fake, 'datasets.list', 'jobs.cancel')).toBe(1);
    scope.stop();
  });

  it('Datasets: a build that fails says why in the wizard', async () => {
    const info = job('datasets.build', 'dataset', null, { jobId: ID, name: 'broken' }, []);
    const fake = workbench(info);
    const scope = effectScope();
    const wizard = scope.run(() => useImportWizard())!;
    await expect.poll(() => wizard.step.value).toBe('build');
    end(fake, info, { error: { code: 'E_DATA', message: 'broken.npy is not a .npy file' } });
    await expect.poll(() => wizard.error.value).toBe('broken.npy is not a .npy file');
    expect(wizard.busy.value).toBe(false);
    scope.stop();
  });
});
