// @vitest-environment happy-dom
// Issue 14 (in the app): the Optimise area's Script target. The form's request and its refusals, the
// final card's command line and code, and the store against the real services (real router, the
// per-item-bound fixture under Debian's python3 with torch): trials live, output, result, past list,
// Cancel, and the refusal of a shell that does not start commands.
import path from 'node:path';

import { flushPromises, mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { watch } from 'vue';
import { createMemoryHistory, createRouter } from 'vue-router';

import type { Services } from '../../src-main/core/services';
import { createServices } from '../../src-main/core/services';
import FinalCard from '../../src-renderer/components/optimise/FinalCard.vue';
import OptimiseView from '../../src-renderer/views/OptimiseView.vue';
import { areas } from '../../src-renderer/areas';
import { formFromRequest, launchesAtMost, scriptOptimiseForm, scriptOptimiseRequest, scriptWizardValues, wizardFromRequest } from '../../src-renderer/view-models/optimise-form';
import { scriptUse } from '../../src-main/api/script-override-code';
import { useOptimiseStore } from '../../src-renderer/stores/optimise';
import { HOST_ENTRY, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, SCRIPTS } from '../script/script-helpers';
import { installServicesClient } from './services-client';

const LOGGED = path.join(SCRIPTS, 'slow_items_logged.py');

const open: { services: Services; cleanup(): void }[] = [];
afterAll(async () => {
  for (const o of open) {
    await o.services.dispose();
    o.cleanup();
  }
});
async function services(allowScripts: boolean): Promise<Services> {
  requireBuilt();
  const ws = tempDir();
  const s = await createServices({ workspaceDir: ws.dir, engine: { entry: HOST_ENTRY }, allowScripts });
  open.push({ services: s, cleanup: ws.cleanup });
  return s;
}

async function until(what: () => boolean, ms = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!what()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await flushPromises();
}

beforeEach(() => setActivePinia(createPinia()));

describe('script wizard form', () => {
  it("starts from the contract's wizard defaults and names each value it refuses", () => {
    const form = { ...scriptOptimiseForm(), commandLine: `python3 "my train.py" --epochs 1`, cwd: '/home/me/proj' };
    expect(form).toMatchObject({ repeat: 5, steps: 30, warmupSteps: 5, timeoutSeconds: 600 });
    expect(scriptWizardValues()).toEqual({ preset: 'balanced', maxTrials: 8, allowRecipeChanges: false, seed: 0, lossTolerance: 0.05, only: [], confounders: 'remeasure', objective: 'throughput' });
    form.overrides = [{ key: 'dataloader.num_workers', value: '1' }];
    expect(scriptOptimiseRequest(form, scriptWizardValues(), 'job-1')).toEqual({
      target: { kind: 'script', command: ['python3', 'my train.py', '--epochs', '1'], cwd: '/home/me/proj', env: {} },
      overrides: { 'dataloader.num_workers': 1 },
      preset: 'balanced',
      repeat: 5,
      steps: 30,
      warmupSteps: 5,
      maxTrials: 8,
      allowRecipeChanges: false,
      seed: 0,
      lossTolerance: 0.05,
      confounders: 'remeasure',
      objective: 'throughput',
      timeoutSeconds: 600,
      jobId: 'job-1',
    });
    const wizard = scriptWizardValues();
    expect(() => scriptOptimiseRequest({ ...form, repeat: 1 }, wizard, 'job-1')).toThrow('repetitions: must be at least 2 (1 given)');
    expect(() => scriptOptimiseRequest({ ...form, steps: null }, wizard, 'job-1')).toThrow(/^measured steps: the wizard stops every launch/);
    expect(() => scriptOptimiseRequest(form, { ...wizard, maxTrials: 101 }, 'job-1')).toThrow('max trials: must be at most 100 (101 given)');
    expect(() => scriptOptimiseRequest({ ...form, cwd: 'proj' }, wizard, 'job-1')).toThrow(/absolute path, got "proj"/);
    expect(() => scriptOptimiseRequest({ ...form, overrides: [{ key: 'matmul.precision', value: 'low' }] }, wizard, 'job-1')).toThrow(/bad value "low" for matmul.precision: highest, high or medium/);
    expect(() => scriptOptimiseRequest(form, { ...wizard, lossTolerance: 0 }, 'job-1')).toThrow('loss tolerance: must be more than 0 (0 given)');
    expect(() => scriptOptimiseRequest(form, { ...wizard, only: ['amp.type' as never] }, 'job-1')).toThrow(/^only: unknown override "amp.type"; known keys: .* \(\["amp.type"\] given\)$/);
    expect(scriptOptimiseRequest(form, { ...wizard, only: ['amp.dtype', 'compile.mode'] }, 'job-1').only).toEqual(['amp.dtype', 'compile.mode']);
    expect(launchesAtMost(3, 2)).toBe(3 + 12 + 6);
    // A saved request back into the form (to resume it) gives the same request.
    const saved = scriptOptimiseRequest({ ...form, env: [{ name: 'A', value: 'b c' }], overrides: [{ key: 'cudnn.benchmark', value: 'true' }] }, { ...wizard, seed: 7, only: ['amp.dtype'] }, 'job-2');
    expect(scriptOptimiseRequest(formFromRequest(saved), wizardFromRequest(saved), 'job-2')).toEqual(saved);
    // A job across machines: its collector travels in the request and back into the form, an IPv6 host in brackets.
    const across = scriptOptimiseRequest({ ...form, collector: '[fd00::1]:29400' }, wizard, 'job-3');
    expect(across.collector).toEqual({ host: 'fd00::1', port: 29400 });
    expect(formFromRequest(across).collector).toBe('[fd00::1]:29400');
    expect(scriptOptimiseRequest(formFromRequest(across), wizardFromRequest(across), 'job-3')).toEqual(across);
    expect(() => scriptOptimiseRequest({ ...form, collector: 'rig a' }, wizard, 'job-3')).toThrow(/^address the other nodes reach: "rig a" is not host\[:port\]/);
  });
});

describe('script final card', () => {
  const target = { kind: 'script' as const, command: ['python3', 'my train.py', '--epochs', '1'], cwd: '/home/me/proj', env: { OMP_NUM_THREADS: '2' } };

  it('writes the kept overrides as the command that applies them and as the lines to put in the script', () => {
    const use = scriptUse(target, { 'dataloader.pin_memory': true, 'matmul.precision': 'high', 'dataloader.num_workers': 4, 'cudnn.benchmark': true });
    expect(use.command).toBe(
      "trainbench benchmark-training --repeat 1 --cwd /home/me/proj --env OMP_NUM_THREADS=2 --set cudnn.benchmark=true --set dataloader.num_workers=4 --set dataloader.pin_memory=true --set matmul.precision=high -- python3 'my train.py' --epochs 1",
    );
    expect(use.code).toEqual(['DataLoader(..., num_workers=4, pin_memory=True)', 'torch.backends.cudnn.benchmark = True', 'torch.set_float32_matmul_precision("high")']);
    expect(scriptUse(target, {}).code).toEqual([]);
  });

  it('says there is nothing to change when no override was kept', () => {
    const final = { overrides: {}, changes: [], speedup: { low: 1, median: 1, high: 1 }, samplesPerSec: { low: 90, median: 100, high: 110 }, verdict: 'No change beat the noise', proposals: [] };
    const card = mount(FinalCard, { props: { target, final } });
    expect(card.get('[data-testid="opt-script-nothing"]').text()).toBe('Nothing to change: run your script as it is.');
    expect(card.find('[data-testid="opt-script-command"]').exists()).toBe(false);
    card.unmount();
  });

  it('does not say "nothing to change" under a recipe change that beat the noise and was only proposed', () => {
    const final = {
      overrides: {}, changes: [], speedup: { low: 1, median: 1, high: 1 }, samplesPerSec: { low: 90, median: 100, high: 110 },
      verdict: 'No change was kept (±3.2%): keep the script as it runs, 100 samples/s. Beat the noise but proposed, not kept, because it changes the training recipe: batch size 64 -> 128, 1.440x [1.400x–1.480x].',
      proposals: ['batch size 64 -> 128: scale the learning rate by 2'],
    };
    const card = mount(FinalCard, { props: { target, final, proposed: [{ knob: 'dataloader.batch_size', to: 128 }] } });
    expect(card.find('[data-testid="opt-script-nothing"]').exists()).toBe(false);
    expect(card.get('[data-testid="opt-script-proposed-only"]').text()).toMatch(/^Nothing kept: the win above changes the training recipe/);
    expect(card.get('[data-testid="opt-script-verdict"]').text()).toMatch(/^No change was kept/);
    expect(card.get('[data-testid="opt-script-proposed-code"]').text()).toBe('DataLoader(..., batch_size=128)');
    expect(card.get('[data-testid="opt-script-proposed-command"]').text()).toBe(
      "trainbench benchmark-training --repeat 1 --cwd /home/me/proj --env OMP_NUM_THREADS=2 --set dataloader.batch_size=128 -- python3 'my train.py' --epochs 1",
    );
    card.unmount();
  });
});

describe('script wizard store', () => {
  it('runs the wizard: trials live, the output per launch, the final overrides, and the past list titled by the command', async () => {
    const s = await services(true);
    installServicesClient(s);
    const store = useOptimiseStore().script;
    store.form = { ...scriptOptimiseForm(), commandLine: `${PYTHON} ${LOGGED}`, cwd: SCRIPTS, repeat: 2, steps: 4, warmupSteps: 1 };
    store.wizard = { ...scriptWizardValues(), maxTrials: 1 };
    store.prepare();
    expect(store.error).toBeNull();
    expect(store.pending?.maxTrials).toBe(1);
    expect(store.running).toBe(false); // nothing runs before "Run this command?" is answered
    const seenTrials: number[] = [];
    let baselineWhileRunning = false;
    const stopBaseline = watch(
      () => store.liveBaseline,
      (b) => (baselineWhileRunning ||= store.running && b !== null),
    );
    const stop = watch(
      () => store.trials,
      (t) => store.running && seenTrials.push(t.length),
    );
    const done = store.confirm();
    expect(store.running).toBe(true);
    await done;
    stop();
    stopBaseline();
    expect(store.error).toBeNull();
    expect(baselineWhileRunning).toBe(true);
    expect(seenTrials).toContain(1); // the trial arrived while the wizard still ran
    const run = store.shown!;
    expect(run.status).toBe('completed');
    expect(run.record?.trials).toHaveLength(1);
    expect(run.record?.trials[0].change.knob).toBe('dataloader.num_workers');
    expect(run.record?.final).not.toBeNull();
    expect(run.title).toBe(`${PYTHON} ${LOGGED}`);
    // Every launch's first line says which loader it ran with: the trial's B sides with 2 workers.
    const firsts = new Map<number, string>();
    for (const l of store.output) if (!firsts.has(l.repetition)) firsts.set(l.repetition, l.line);
    expect(firsts.get(1)).toBe('loader num_workers=0 batch_size=32');
    expect(firsts.get(4)).toBe('loader num_workers=2 batch_size=32');

    expect(await s.router.dispatch('optimise.state', { jobId: run.runId })).toEqual(run.record);
    const optimise = useOptimiseStore();
    await optimise.refreshPast();
    expect(optimise.past).toHaveLength(1);
    expect(optimise.past[0]).toMatchObject({ jobId: run.runId, kind: 'script', title: `${PYTHON} ${LOGGED}`, status: 'completed', trials: 1, resumable: false });

    // Opened again from the list (a fresh window), it shows the same run.
    setActivePinia(createPinia());
    const again = useOptimiseStore().script;
    await again.open(run.runId);
    expect(again.shown?.record).toEqual(run.record);
    expect(again.trials).toEqual(run.record?.trials);
  }, 120_000);

  it('Cancel kills the launch in flight; the run is cancelled and keeps the finished trial', async () => {
    const s = await services(true);
    installServicesClient(s);
    const store = useOptimiseStore().script;
    const mark = newMark();
    store.form = { ...scriptOptimiseForm(), commandLine: `${PYTHON} ${LOGGED}`, cwd: SCRIPTS, repeat: 2, steps: 4, warmupSteps: 1, env: [{ name: 'TB_TEST_MARK', value: mark }] };
    store.wizard = { ...scriptWizardValues(), maxTrials: 3 };
    store.prepare();
    const done = store.confirm();
    // The job is named at once, in the one scheme of job ids (api/ids.ts), so Cancel reaches it before its first event.
    expect(store.jobId).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
    // Trial 2's first launch (the 7th) has printed: it runs now.
    await until(() => store.output.some((l) => l.repetition === 7));
    await store.cancel();
    await done;
    expect(store.cancelled).toBe(true);
    expect(store.error).toMatch(/^the script optimisation was cancelled after 1 finished trial; its run runs\/[\w-]+ keeps what it measured/);
    expect(store.shown?.status).toBe('cancelled');
    expect(store.shown?.record?.trials).toHaveLength(1);
    expect(store.shown?.record?.final).toBeNull();
    expect(store.trials).toHaveLength(1);
    expect(processesWithMark(mark)).toEqual([]);

    // Listed as resumable; Resume asks "Run this command?" again with the saved settings and the run to go on from.
    const optimise = useOptimiseStore();
    await optimise.refreshPast();
    expect(optimise.past[0]).toMatchObject({ jobId: store.shown!.runId, kind: 'script', status: 'cancelled', trials: 1, resumable: true });
    setActivePinia(createPinia());
    const again = useOptimiseStore().script;
    await again.resume(store.shown!.runId);
    expect(again.error).toBeNull();
    expect(again.pending).toMatchObject({ resumeFrom: store.shown!.runId, maxTrials: 3, repeat: 2, steps: 4, target: { command: [PYTHON, LOGGED], env: { TB_TEST_MARK: mark } } });
    // The stopped wizard's job id stays with its run: the new job is named when it starts (see the job id above).
    expect(again.pending).not.toHaveProperty('jobId');
    expect(again.form.commandLine).toBe(`${PYTHON} ${LOGGED}`);
    expect(again.wizard.maxTrials).toBe(3);
    expect(again.running).toBe(false);
  }, 120_000);

  it('a wizard across machines: the join code its other nodes follow with is shown while it runs, and gone when it ends', async () => {
    const s = await services(true);
    installServicesClient(s);
    const store = useOptimiseStore().script;
    const mark = newMark();
    store.form = { ...scriptOptimiseForm(), commandLine: `${PYTHON} ${LOGGED}`, cwd: SCRIPTS, repeat: 2, steps: 4, warmupSteps: 1, collector: '127.0.0.1', env: [{ name: 'TB_TEST_MARK', value: mark }] };
    store.wizard = { ...scriptWizardValues(), maxTrials: 1 };
    store.prepare();
    expect(store.pending?.collector).toEqual({ host: '127.0.0.1', port: 0 });
    // Every area named as the app's router names it (the view links to its run in Runs), none of them drawn.
    const router = createRouter({ history: createMemoryHistory(), routes: areas.map((a) => ({ path: a.path, name: a.name, component: { template: '<div />' } })) });
    await router.push('/optimise');
    const view = mount(OptimiseView, { global: { plugins: [router], stubs: { Echarts: true } } });
    useOptimiseStore().target = 'script';
    const done = store.confirm();
    await until(() => store.join !== null);
    expect(store.join).toMatch(/^tbf1\.[\w-]+$/);
    await flushPromises();
    expect(view.find('[data-test="script-join-line"]').text()).toBe(`trainbench join ${store.join} -- <its torchrun command>`);
    await store.cancel();
    await done;
    await flushPromises();
    expect(view.find('[data-test="script-join"]').exists()).toBe(false);
    expect(processesWithMark(mark)).toEqual([]);
    view.unmount();
  }, 120_000);

  it('a wizard another window runs: opened from the list it is followed live, and Cancel there stops it', async () => {
    const s = await services(true);
    installServicesClient(s);
    const first = useOptimiseStore().script;
    const mark = newMark();
    first.form = { ...scriptOptimiseForm(), commandLine: `${PYTHON} ${LOGGED}`, cwd: SCRIPTS, repeat: 2, steps: 4, warmupSteps: 1, env: [{ name: 'TB_TEST_MARK', value: mark }] };
    first.wizard = { ...scriptWizardValues(), maxTrials: 3 };
    first.prepare();
    const done = first.confirm();
    await until(() => first.progress !== null); // the first baseline launch is done
    const runId = first.progress!.runId!;

    setActivePinia(createPinia());
    const other = useOptimiseStore().script;
    await other.open(runId);
    expect(other.watching).toBe(true);
    expect(other.shown).toMatchObject({ runId, status: 'running', title: `${PYTHON} ${LOGGED}`, record: null });
    expect(other.jobId).toBe(first.jobId);
    // Its events reach this window too: the baseline when measured, then trial 1.
    await until(() => other.trials.length === 1);
    expect(other.liveBaseline?.baseline.repetitions).toHaveLength(2);
    expect(other.output.length).toBeGreaterThan(0);
    await other.cancel();
    await done;
    expect(first.cancelled).toBe(true);
    await until(() => !other.watching, 10_000);
    expect(other.shown?.status).toBe('cancelled');
    expect(other.shown?.record?.trials).toHaveLength(1);
    expect(other.error).toBeNull();
    expect(processesWithMark(mark)).toEqual([]);
  }, 120_000);

  it('a shell that does not start commands: the refusal, and no run', async () => {
    const s = await services(false);
    installServicesClient(s);
    const store = useOptimiseStore().script;
    store.form = { ...scriptOptimiseForm(), commandLine: `${PYTHON} ${LOGGED}`, cwd: SCRIPTS };
    store.prepare();
    await store.confirm();
    expect(store.forbidden).toContain('serve mode started with --allow-scripts');
    expect(store.error).toBeNull();
    expect(store.shown).toBeNull();
    expect((await s.router.dispatch('runs.list', {})) as unknown[]).toEqual([]);
    // Reading what a run measured starts nothing: answered here too (this one names the missing wizard and run, not the gate).
    await expect(s.router.dispatch('optimise.state', { jobId: 'no-such-run' })).rejects.toThrow(/^no optimisation with the id no-such-run in this workspace .*a script optimisation run runs\/no-such-run/);
  }, 30_000);
});
