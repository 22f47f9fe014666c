// @vitest-environment happy-dom
// Issue 27 item 9, progress on every wait: the loader benchmark's store (its rows as they come, a bar, Cancel
// through jobs.cancel, a cancel that keeps what was measured and is not an error).
import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';
import { effectScope } from 'vue';

import type { BuildResult, LoaderBenchProgress } from '../../src-main/api/datasets';
import { useImportWizard } from '../../src-renderer/composables/useImportWizard';
import { useDatasetsStore } from '../../src-renderer/stores/datasets';
import { useJobsStore } from '../../src-renderer/stores/jobs';
import { loaderProgressText, useLoaderBenchStore } from '../../src-renderer/stores/loader-bench';
import { fail, installFakeClient, ok } from './fake-client';

beforeEach(() => setActivePinia(createPinia()));

const ID = '20261127-050000-abcdef';
const row = (workers: number) => ({ workers, prefetch: 2, samplesPerSec: 1000 * (workers + 1), mbPerSec: 10, latencyP50Ms: 1, latencyP95Ms: 2, waitedFraction: 0.5, workerEfficiency: 1, batches: 10, seconds: 1 });
const loaderEvent = (done: number, phase: 'measuring' | 'measured', workers: number): LoaderBenchProgress => ({
  jobId: ID, runId: 'loader-run', phase, path: 'cached', workers, prefetch: 2, done, total: 6, maxSeconds: 1, row: phase === 'measured' ? row(workers) : null,
});

describe('the loader benchmark store', () => {
  it('words a setting of the source files, and one measured', () => {
    expect(loaderProgressText({ ...loaderEvent(3, 'measuring', 1), path: 'uncached' }, false)).toEqual({ text: 'setting 4 of 6: 1 worker, prefetch 2, reading the source files in place…', fraction: 0.5 });
    expect(loaderProgressText(loaderEvent(3, 'measured', 2), false).text).toBe('3 of 6 settings measured');
  });

  it('shows each setting as it is measured, with a bar, and a Cancel that keeps what was measured', async () => {
    let finish: ((v: ReturnType<typeof fail>) => void) | null = null;
    const fake = installFakeClient((m) => {
      if (m === 'jobs.list') return ok([]);
      if (m === 'jobs.cancel') return ok({ cancelled: true });
      if (m === 'datasets.benchmark') return new Promise((resolve) => (finish = resolve));
      return ok({});
    });
    useJobsStore().start();
    const store = useLoaderBenchStore();
    const done = store.start({ dataset: 'small-0123456789ab', workers: [0, 1, 2], prefetch: [2], maxSeconds: 1 });
    await expect.poll(() => fake.calls.some((c) => c.method === 'datasets.benchmark')).toBe(true);
    const jobId = (fake.calls.find((c) => c.method === 'datasets.benchmark')!.params as { jobId: string }).jobId;
    const emit = (e: LoaderBenchProgress) => fake.emit('datasets.benchmarkProgress', { ...e, jobId });
    expect(store.running).toBe(true);
    expect(store.status.text).toBe('opening the cache…');
    emit(loaderEvent(0, 'measuring', 0));
    expect(store.status).toEqual({ text: 'setting 1 of 6: 0 workers, prefetch 2, reading the cache…', fraction: 0 });
    emit(loaderEvent(1, 'measured', 0));
    emit(loaderEvent(1, 'measuring', 1));
    fake.emit('datasets.benchmarkProgress', { ...loaderEvent(5, 'measured', 2), jobId: 'another-job' });
    expect(store.rows.cached.map((r) => r.workers)).toEqual([0]);
    expect(store.status.fraction).toBeCloseTo(1 / 6);

    await store.cancel();
    expect(fake.calls.filter((c) => c.method.endsWith('.cancel'))).toEqual([{ method: 'jobs.cancel', params: { jobId } }]);
    expect(store.status.text).toBe('stopping after the setting in flight (at most 1 s)…');
    emit(loaderEvent(2, 'measured', 1));
    finish!(fail('E_CANCELLED', 'the loader benchmark was cancelled after 2 of 6 settings'));
    expect(await done).toBeNull();
    expect(store.running).toBe(false);
    expect(store.stopped).toEqual({ runId: 'loader-run', done: 2, total: 6 });
    // A cancel is not an error; the rows measured stay on screen.
    expect(store.error).toBeNull();
    expect(store.rows.cached.map((r) => r.workers)).toEqual([0, 1]);
  });

  it('says what went wrong when it fails, and shows the answer when it ends', async () => {
    const answers = [fail('E_DATA', 'shard-00000.bin is shorter than its manifest says')];
    const fake = installFakeClient((m) => {
      if (m === 'jobs.list') return ok([]);
      if (m === 'datasets.benchmark') return answers.shift() ?? ok(result);
      return ok({});
    });
    const telemetry = { samples: 0, gpuUtilizationMean: null, gpuUtilizationP95: null, gpuMemoryPeakMiB: null, gpuPowerMeanW: null, cpuMean: null, gpu: 'none' };
    const result = { dataset: 'small-0123456789ab', batchSize: 256, cached: [row(0), row(1)], uncached: null, uncachedReason: 'not requested', best: { workers: 1, prefetch: 2 }, telemetry };
    void fake;
    const store = useLoaderBenchStore();
    await store.start({ dataset: 'small-0123456789ab' });
    expect(store.error).toBe('shard-00000.bin is shorter than its manifest says');
    expect(store.stopped).toBeNull();
    const answer = await store.start({ dataset: 'small-0123456789ab' });
    expect(answer?.best).toEqual({ workers: 1, prefetch: 2 });
    expect(store.error).toBeNull();
    expect(store.rows.cached).toHaveLength(2);
  });
});

describe('a loader benchmark running when the window opens', () => {
  it('replays its rows and follows it to its end; the import wizard, which built no cache, stays where it is', async () => {
    const events = [loaderEvent(0, 'measuring', 0), loaderEvent(1, 'measured', 0), loaderEvent(1, 'measuring', 1)];
    const info = {
      jobId: ID, method: 'datasets.benchmark', kind: 'loader', target: null, request: { dataset: 'small-0123456789ab', jobId: ID },
      startedAt: '2026-11-27T05:00:00.000Z', cancelling: false, events: events.map((data) => ({ event: 'datasets.benchmarkProgress', data })),
    };
    const fake = installFakeClient((m) => (m === 'jobs.list' ? ok([info]) : m === 'datasets.list' ? ok([]) : ok({})));
    useJobsStore().start();
    const scope = effectScope();
    const wizard = scope.run(() => useImportWizard())!;
    const store = useLoaderBenchStore();
    await expect.poll(() => store.rows.cached.length).toBe(1);
    // Shown in a card of its own (LoaderBenchCard): the wizard's step is for the cache it built.
    expect(wizard.step.value).toBe('source');
    expect(wizard.busy.value).toBe(true);
    expect(store.dataset).toBe('small-0123456789ab');
    expect(store.status.text).toBe('setting 2 of 6: 1 worker, prefetch 2, reading the cache…');
    fake.emit('datasets.benchmarkProgress', loaderEvent(2, 'measured', 1));
    expect(store.rows.cached).toHaveLength(2);
    fake.emit('jobs.ended', { jobId: ID, method: 'datasets.benchmark', kind: 'loader', target: null, ok: false, error: { code: 'E_CANCELLED', message: 'cancelled after 2 of 6 settings' } });
    await expect.poll(() => store.running).toBe(false);
    expect(store.stopped).toEqual({ runId: 'loader-run', done: 2, total: 6 });
    expect(wizard.error.value).toBeNull();
    scope.stop();
  });
});

describe('the import wizard and a loader benchmark started from a row', () => {
  const builtOf = (id: string) => ({ dataset: { id, name: id.replace(/-[0-9a-f]{12}$/, ''), records: 4000 } }) as unknown as BuildResult;

  it("goes to its benchmark step for the cache it built, and back to its build step when another cache's is started", async () => {
    let finish: ((v: ReturnType<typeof ok>) => void) | null = null;
    installFakeClient((m) => {
      if (m === 'jobs.list') return ok([]);
      if (m === 'datasets.benchmark') return new Promise((resolve) => (finish = resolve));
      return ok([]);
    });
    useJobsStore().start();
    const scope = effectScope();
    const wizard = scope.run(() => useImportWizard())!;
    useDatasetsStore().built = builtOf('small-0123456789ab');
    const store = useLoaderBenchStore();
    const ours = wizard.benchmark();
    await expect.poll(() => store.running).toBe(true);
    expect(wizard.step.value).toBe('benchmark');
    // "Benchmark the loader" and "Benchmark again" wait while one runs: one benchmark at a time.
    expect(wizard.busy.value).toBe(true);
    finish!(ok(null));
    await ours;
    void store.sweep({ id: 'tiny-84347349393a', records: 200 });
    await expect.poll(() => wizard.step.value).toBe('build');
    expect(store.dataset).toBe('tiny-84347349393a');
    finish!(ok(null));
    scope.stop();
  });
});
