// @vitest-environment happy-dom
// Issue 14 (in the app): the Script target's form, confirmation, live output and refusal, against the
// real services (real router, real tiny_train.py under Debian's python3 with torch).
import { existsSync } from 'node:fs';
import path from 'node:path';

import { flushPromises, mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';

import type { Services } from '../../src-main/core/services';
import { createServices } from '../../src-main/core/services';
import { emptyScriptForm, quoteArgv, scriptRequestFromForm, splitCommandLine } from '../../src-renderer/view-models/script-target-form';
import { useBenchmarksStore } from '../../src-renderer/stores/benchmarks';
import BenchmarksView from '../../src-renderer/views/BenchmarksView.vue';
import { HOST_ENTRY, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, SCRIPTS } from '../script/script-helpers';
import { installServicesClient } from './services-client';

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

beforeEach(() => setActivePinia(createPinia()));

describe('script form', () => {
  it('splits a command line like a shell (quotes, escapes) and quotes it back the same', () => {
    const argv = splitCommandLine(`python3 "my train.py" --name 'a b' x\\ y --lr=0.1`);
    expect(argv).toEqual(['python3', 'my train.py', '--name', 'a b', 'x y', '--lr=0.1']);
    expect(splitCommandLine(quoteArgv(argv))).toEqual(argv);
    expect(() => splitCommandLine(`python3 "train.py`)).toThrow(/unclosed " quote/);
  });

  it('builds the API request and names each bad field', () => {
    const form = { ...emptyScriptForm(), commandLine: 'python3 train.py', cwd: '/home/me/proj' };
    form.env = [{ name: 'OMP_NUM_THREADS', value: '2' }];
    form.overrides = [{ key: 'dataloader.num_workers', value: '4' }, { key: 'cudnn.benchmark', value: 'true' }];
    expect(scriptRequestFromForm(form)).toMatchObject({
      target: { kind: 'script', command: ['python3', 'train.py'], cwd: '/home/me/proj', env: { OMP_NUM_THREADS: '2' } },
      overrides: { 'dataloader.num_workers': 4, 'cudnn.benchmark': true },
      steps: 20,
    });
    // Timing the ranks at their collectives is asked for (a job of one process has none), never on by default.
    expect(scriptRequestFromForm(form)).not.toHaveProperty('collectives');
    expect(scriptRequestFromForm({ ...form, collectives: true })).toMatchObject({ collectives: true });
    expect(scriptRequestFromForm({ ...form, collectives: true })).not.toHaveProperty('collectivesPerBucket');
    expect(scriptRequestFromForm({ ...form, collectives: true, collectivesPerBucket: true })).toMatchObject({ collectives: true, collectivesPerBucket: true });
    // Each bucket is a refinement of timing the collectives: left ticked alone, it asks for nothing.
    expect(scriptRequestFromForm({ ...form, collectivesPerBucket: true })).not.toHaveProperty('collectivesPerBucket');
    // A job across machines: the address its other nodes reach, which implies timing the collectives.
    expect(scriptRequestFromForm({ ...form, collector: ' 10.0.0.1:29400 ' })).toMatchObject({ collector: { host: '10.0.0.1', port: 29400 }, collectives: true });
    expect(scriptRequestFromForm({ ...form, collector: '[fd00::1]' })).toMatchObject({ collector: { host: 'fd00::1', port: 0 } });
    expect(scriptRequestFromForm({ ...form, collector: '  ' })).not.toHaveProperty('collector');
    expect(() => scriptRequestFromForm({ ...form, collector: '10.0.0.1:99999' })).toThrow('address the other nodes reach: "10.0.0.1:99999" is not host[:port] (e.g. 10.0.0.1 or 10.0.0.1:29400)');
    expect(() => scriptRequestFromForm({ ...form, collector: 'a b' })).toThrow(/"a b" is not host\[:port\]/);
    expect(() => scriptRequestFromForm({ ...form, commandLine: '  ' })).toThrow(/command: type the command/);
    expect(() => scriptRequestFromForm({ ...form, cwd: 'proj' })).toThrow(/absolute path, got "proj"/);
    expect(() => scriptRequestFromForm({ ...form, env: [{ name: '1BAD', value: 'x' }] })).toThrow(/"1BAD"/);
    expect(() => scriptRequestFromForm({ ...form, overrides: [{ key: 'dataloader.num_workers', value: '-1' }] })).toThrow(/bad value "-1" for dataloader.num_workers/);
    expect(() => scriptRequestFromForm({ ...form, repeat: 0 })).toThrow(/^repeat: /);
  });
});

/** The Benchmarks area on its Script target: the command's fields, confirmation, live output, refusal, Cancel. */
function mountScriptSide() {
  useBenchmarksStore().target = 'script';
  return mount(BenchmarksView);
}

describe('the Benchmarks area on a Script target', () => {
  it('asks "Run this command?" with the exact argv, cwd and env, then streams the output and shows the result', async () => {
    const s = await services(true);
    installServicesClient(s);
    const wrapper = mountScriptSide();
    const store = useBenchmarksStore().script;
    await wrapper.get('[data-test="script-command"]').setValue(`${PYTHON} ${path.join(SCRIPTS, 'tiny_train.py')} plain`);
    await wrapper.get('[data-test="script-cwd"]').setValue(SCRIPTS);
    await wrapper.get('[data-test="script-env-add"]').trigger('click');
    await wrapper.get('[data-test="script-env-name"]').setValue('STEPS');
    await wrapper.get('[data-test="script-env-value"]').setValue('6');
    await wrapper.get('[data-test="script-warmup"]').setValue(1);
    // No measured-step limit: the script runs to its own end and prints its last line.
    await wrapper.get('[data-test="script-steps"]').setValue('');
    await wrapper.get('[data-test="script-start"]').trigger('click');

    // Nothing has run yet: the confirmation shows what would.
    expect(store.running).toBe(false);
    expect(wrapper.get('[data-test="confirm-command"]').text()).toBe(`${PYTHON} ${path.join(SCRIPTS, 'tiny_train.py')} plain`);
    expect(wrapper.get('[data-test="confirm-cwd"]').text()).toBe(SCRIPTS);
    expect(wrapper.get('[data-test="confirm-env"]').text()).toBe('STEPS=6');

    await wrapper.get('[data-test="confirm-run"]').trigger('click');
    expect(store.running).toBe(true);
    expect(wrapper.find('[data-test="script-cancel"]').exists()).toBe(true);
    while (store.running) await new Promise((r) => setTimeout(r, 50));
    await flushPromises();

    expect(store.error).toBeNull();
    expect(store.result?.steps).toBe(5);
    expect(store.result?.target.command.command[0]).toBe(PYTHON);
    expect(store.result && existsSync(path.join(s.workspace.root, store.result.runDir))).toBe(true);
    expect(store.output.map((l) => l.line)).toContain('trained steps=6');
    expect(wrapper.get('[data-test="script-output"]').text()).toContain(store.output[0]!.line);

    // The Benchmarks area lists the saved run (kind benchmark, target script) under its command.
    setActivePinia(createPinia());
    const view = mount(BenchmarksView);
    for (let i = 0; i < 100 && !view.find('[data-testid="script-benchmark-table"]').exists(); i++) {
      await new Promise((r) => setTimeout(r, 50));
      await flushPromises();
    }
    const row = view.get(`[data-testid="script-benchmark-${store.result!.runId}"]`).text();
    expect(row).toContain(`${PYTHON} ${path.join(SCRIPTS, 'tiny_train.py')} plain`);
    expect(row).toContain(`in ${SCRIPTS}`);
    expect(view.find('[data-test="script-runner"]').exists()).toBe(false);
    await view.get('[data-testid="target-script"]').setValue(true);
    expect(view.find('[data-test="script-runner"]').exists()).toBe(true);
    view.unmount();
  }, 90_000);

  it('Cancel stops a hanging script, its child included, and says it was cancelled', async () => {
    installServicesClient(await services(true));
    const wrapper = mountScriptSide();
    const store = useBenchmarksStore().script;
    const mark = newMark();
    await wrapper.get('[data-test="script-command"]').setValue(`${PYTHON} ${path.join(SCRIPTS, 'tiny_train.py')} hang`);
    await wrapper.get('[data-test="script-cwd"]').setValue(SCRIPTS);
    await wrapper.get('[data-test="script-env-add"]').trigger('click');
    await wrapper.get('[data-test="script-env-name"]').setValue('TB_TEST_MARK');
    await wrapper.get('[data-test="script-env-value"]').setValue(mark);
    await wrapper.get('[data-test="script-warmup"]').setValue(1);
    await wrapper.get('[data-test="script-steps"]').setValue('');
    await wrapper.get('[data-test="script-start"]').trigger('click');
    await wrapper.get('[data-test="confirm-run"]').trigger('click');
    for (let i = 0; i < 400 && !store.output.some((l) => l.line === 'hanging now'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(store.running).toBe(true);
    await wrapper.get('[data-test="script-cancel"]').trigger('click');
    for (let i = 0; i < 400 && store.running; i++) await new Promise((r) => setTimeout(r, 50));
    await flushPromises();
    expect(store.running).toBe(false);
    expect(wrapper.get('[data-test="script-error"]').text()).toMatch(/cancelled/);
    expect(wrapper.get('[data-test="script-error"]').classes()).toContain('notice');
    expect(processesWithMark(mark)).toEqual([]);
  }, 60_000);

  it('shows the refusal and how to allow scripts when the shell does not start commands', async () => {
    installServicesClient(await services(false));
    const wrapper = mountScriptSide();
    await wrapper.get('[data-test="script-command"]').setValue('/bin/sh -c "touch x"');
    await wrapper.get('[data-test="script-cwd"]').setValue('/tmp');
    await wrapper.get('[data-test="script-start"]').trigger('click');
    await wrapper.get('[data-test="confirm-run"]').trigger('click');
    await flushPromises();
    const text = wrapper.get('[data-test="script-forbidden"]').text();
    expect(text).toContain('trainbench serve --allow-scripts');
    expect(text).toContain('does not start commands');
    expect(wrapper.find('[data-test="script-error"]').exists()).toBe(false);
  }, 30_000);

  it('keeps a bad form out of the confirmation and says what is wrong', async () => {
    installServicesClient(await services(false));
    const wrapper = mountScriptSide();
    await wrapper.get('[data-test="script-command"]').setValue('python3 train.py');
    await wrapper.get('[data-test="script-cwd"]').setValue('relative/dir');
    await wrapper.get('[data-test="script-start"]').trigger('click');
    expect(wrapper.find('[data-test="script-confirm"]').exists()).toBe(false);
    expect(wrapper.get('[data-test="script-error"]').text()).toContain('absolute path, got "relative/dir"');
  }, 30_000);
});
