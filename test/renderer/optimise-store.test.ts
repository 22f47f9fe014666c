// @vitest-environment happy-dom
// The Optimise area's store against the real services (real engine host, Debian's Fashion-MNIST):
// a small CPU wizard started from the form, its trials arriving live, cancelled, listed, resumed.
import { spawn } from 'node:child_process';

import { createPinia, setActivePinia } from 'pinia';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { watch } from 'vue';

import type { WizardState } from '../../src-main/api/optimise';
import type { RunSummary } from '../../src-main/api/training';
import type { Services } from '../../src-main/core/services';
import { optimiseFormValues, optimiseRequest } from '../../src-renderer/view-models/optimise-form';
import { cancelledWords, pastStatus, targetTitle, useOptimiseStore } from '../../src-renderer/stores/optimise';
import { CLI } from '../helpers/repo';
import { testServices } from '../helpers/services';
import { installServicesClient } from './services-client';

let services: Services;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ services, cleanup } = await testServices());
}, 60_000);
afterAll(async () => {
  await cleanup?.();
});
beforeEach(() => setActivePinia(createPinia()));

describe('optimise form', () => {
  it('starts from the recipe and the contract defaults, and names each value the contract refuses', () => {
    const v = optimiseFormValues('bottleneck_resnet', { data: 'example-board', device: 'cpu' });
    // The board network's recipe batch (256); the contract's wizard defaults (the batch-size search unticked on the CPU).
    expect(v).toMatchObject({ batchSize: 256, repeat: 5, maxTrials: 12, steps: 50, warmupSteps: 5, preset: 'balanced', readFrom: 'cache', allowRecipeChanges: false, batchSearch: false });
    const good = optimiseRequest(v, 'ui-optimise-test');
    expect(good.errors).toBeNull();
    expect(good.request?.target.options.batchSize).toBe(256);
    expect(good.request?.target.data).toEqual({ kind: 'example-board' });

    const bad = optimiseRequest({ ...v, repeat: 1, batchSize: 0, maxTrials: 1.5, data: 'dataset:../x' }, 'ui-optimise-test');
    expect(bad.request).toBeNull();
    expect(bad.errors).toEqual({
      repeat: 'must be at least 2 (1 given)',
      batchSize: 'must be at least 1 (0 given)',
      maxTrials: 'must be a whole number (1.5 given)',
      data: `ids are letters, digits, '.', '_' and '-', not starting with '.' ("dataset:../x" given)`,
    });
  });
});

describe('past optimisations', () => {
  it('calls a running state interrupted when the run that holds it is no longer running', () => {
    const state = { status: 'running' } as WizardState;
    const run = (status: RunSummary['status']) => ({ status }) as RunSummary;
    expect(pastStatus(state, run('running'))).toBe('running');
    expect(pastStatus(state, run('interrupted'))).toBe('interrupted');
    expect(pastStatus(state, undefined)).toBe('interrupted');
    expect(pastStatus({ status: 'cancelled' } as WizardState, run('failed'))).toBe('cancelled');
  });
});

describe('optimise store (real services)', () => {
  it('runs a wizard from the form with trials arriving live, cancels it, lists it, and resumes it to the end', async () => {
    installServicesClient(services);
    const store = useOptimiseStore();
    Object.assign(store.form, { loaderWorkers: 0, prefetch: 1, threads: 1, repeat: 3, maxTrials: 4, steps: 20, warmupSteps: 2 });

    // Cancel as soon as the first trial arrives, while the wizard runs.
    const seenWhileRunning: number[] = [];
    const stop = watch(
      () => store.trials.length,
      (n) => {
        if (store.running) seenWhileRunning.push(n);
        if (n === 1) void store.cancel();
      },
    );
    await store.start();
    stop();
    expect(seenWhileRunning[0]).toBe(1);
    expect(store.running).toBe(false);
    expect(store.cancelled).toBe(true);
    const id = store.jobId!;
    // The wizard's id is its job's, in the one scheme of job ids (api/ids.ts).
    expect(id).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
    // A person's own cancel, said as such (issue 27), not as an E_CANCELLED error pointing at the CLI.
    expect(store.error).toBe('Cancelled after 1 trial. The baseline and every finished trial are kept: Resume in the list below goes on from there (a trial that was running is measured again).');
    expect(store.state?.status).toBe('cancelled');
    expect(store.state?.baseline?.repetitions).toHaveLength(3);
    expect(store.state?.diagnosis?.findings.length).toBeGreaterThan(0);
    expect(store.state?.limits?.compute.samplesPerSec).toBeGreaterThan(0);
    expect(store.trials.map((t) => t.index)).toEqual([1]);

    await store.refreshPast();
    const listed = store.past.find((p) => p.jobId === id);
    expect(listed).toMatchObject({ status: 'cancelled', resumable: true, trials: 1, title: 'mlp on fashion-mnist', preset: 'balanced' });

    const first = store.trials[0];
    await store.resume(id);
    expect(store.error).toBeNull();
    expect(store.result?.status).toBe('completed');
    expect(store.state?.status).toBe('completed');
    expect(store.state?.final).not.toBeNull();
    // The trial finished before the cancel is kept, not measured again.
    expect(store.trials[0]).toEqual(first);
    expect(store.trials.map((t) => t.index)).toEqual(store.result!.trials.map((t) => t.index));
    expect(store.trials.length).toBeGreaterThan(1);
    await store.refreshPast();
    expect(store.past.find((p) => p.jobId === id)).toMatchObject({ status: 'completed', resumable: false });
    expect(targetTitle(store.state!.request.target)).toBe('mlp on fashion-mnist');

    // Opening it again from the list shows the saved wizard.
    setActivePinia(createPinia());
    const again = useOptimiseStore();
    await again.open(id);
    expect(again.state?.final).toEqual(store.state?.final);
    expect(again.trials).toEqual(store.trials);
  }, 120_000);

  it('lists a wizard whose process was killed as interrupted, and Resume finishes it from its saved state', async () => {
    installServicesClient(services);
    // `trainbench optimise` on the same workspace, killed outright after its first trial was saved.
    const args = ['--loader-workers', '0', '--prefetch', '1', '--threads', '1', '--repeat', '3', '--max-trials', '3', '--steps', '40', '--warmup-steps', '2'];
    const child = spawn(process.execPath, [CLI, 'optimise', '--model', 'mlp', '--data', 'fashion-mnist', ...args, '--workspace', services.workspace.root], { stdio: ['ignore', 'ignore', 'pipe'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let stderr = '';
    const id = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        const saved = /^trial 1: .* state saved/m.test(stderr) && /^optimisation (\d{8}-\d{6}-[0-9a-f]{6})\b/m.exec(stderr);
        if (saved) resolve(saved[1]);
      });
      child.once('exit', () => reject(new Error(`the CLI ended before its first trial: ${stderr}`)));
    });
    // While it runs, the area watches it through its saved state (the CLI sends no events here); Cancel says whose it is to stop.
    const store = useOptimiseStore();
    await store.refreshPast();
    expect(store.past.find((p) => p.jobId === id)?.status).toBe('running');
    await store.open(id);
    expect(store.watching).toBe(true);
    expect(store.trials.length).toBeGreaterThanOrEqual(1);
    await store.cancel();
    expect(store.error).toBe(`optimisation ${id} is not running in this server (it runs in a trainbench optimise process): stop that process, then resume it here`);

    child.kill('SIGKILL');
    await exited;
    await store.refreshPast();
    expect(store.past.find((p) => p.jobId === id)).toMatchObject({ status: 'interrupted', resumable: true, trials: 1 });
    const saved = await services.optimise.state(id);
    await store.resume(id);
    expect(store.error).toBeNull();
    expect(store.state?.status).toBe('completed');
    expect(store.trials[0]).toEqual(saved!.trials[0]);
    await store.refreshPast();
    expect(store.past.find((p) => p.jobId === id)).toMatchObject({ status: 'completed', resumable: false });
  }, 120_000);

  it('watches a wizard another window runs, with its events, and cancels it', async () => {
    installServicesClient(services);
    const values = { ...optimiseFormValues('mlp', { data: 'fashion-mnist', device: 'cpu' }), loaderWorkers: 0, prefetch: 1, threads: 1, repeat: 3, maxTrials: 8, steps: 20, warmupSteps: 2 };
    const id = `other-window-${Date.now().toString(36)}`;
    // Another window's start: the call runs in this server, its events reach every client.
    const other = services.optimise.start(optimiseRequest(values, id).request!).then(
      () => null,
      (err: unknown) => err,
    );
    const store = useOptimiseStore();
    await expect
      .poll(
        async () => {
          await store.refreshPast();
          return store.past.find((p) => p.jobId === id)?.status;
        },
        { timeout: 30_000 },
      )
      .toBe('running');
    await store.open(id);
    expect(store.watching).toBe(true);
    expect(store.running).toBe(false);
    await expect.poll(() => store.trials.length, { timeout: 60_000 }).toBeGreaterThan(0);
    expect(store.progress?.jobId).toBe(id);
    await store.cancel();
    expect(await other).toMatchObject({ code: 'E_CANCELLED' });
    await expect.poll(() => store.watching, { timeout: 10_000 }).toBe(false);
    expect(store.state?.status).toBe('cancelled');
    // The list is re-read when the watch ends.
    await expect.poll(() => store.past.find((p) => p.jobId === id)?.status, { timeout: 10_000 }).toBe('cancelled');
    expect(store.past.find((p) => p.jobId === id)?.resumable).toBe(true);
  }, 120_000);

  it('shows the contract error when the saved state does not exist', async () => {
    installServicesClient(services);
    const store = useOptimiseStore();
    await store.open('no-such-optimisation');
    expect(store.error).toMatch(/^no optimisation with the id no-such-optimisation in this workspace/);
    await store.resume('no-such-optimisation');
    expect(store.error).toMatch(/^no optimisation with the id no-such-optimisation/);
    expect(store.running).toBe(false);
  });
});

describe("the words of a person's own cancel of the engine wizard", () => {
  // UI round 4: cancelled inside the baseline, it said what was measured is kept; Resume measured the baseline again.
  it('says Resume measures the baseline again when it was not saved, and goes on from the trials when it was', () => {
    expect(cancelledWords(0, false)).toBe('Cancelled before the baseline was measured in full: nothing was kept, and Resume in the list below measures the baseline again.');
    expect(cancelledWords(0, true)).toBe('Cancelled after 0 trials. The baseline and every finished trial are kept: Resume in the list below goes on from there (a trial that was running is measured again).');
  });
});
