// @vitest-environment happy-dom
// Issue 41, F1 (re-attack 8): an engine wizard's saved state is a workspace file; a planted `message` in it
// (control, bidi and invisible characters) is shown escaped on the Optimise page, as the CLI shows it.
import { cpSync } from 'node:fs';
import path from 'node:path';

import { mount } from '@vue/test-utils';
import { createPinia } from 'pinia';
import { describe, expect, it } from 'vitest';
import { createMemoryHistory, createRouter } from 'vue-router';

import { loadWizardState } from '../../src-main/core/targets/wizard-state';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import WizardShown from '../../src-renderer/components/optimise/WizardShown.vue';
import { REPO_ROOT } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

// The fixture workspace of a version 1 engine wizard, read as the service reads it (upgraded), from a copy:
// opening a workspace writes its workspace.json.
const fixture = path.join(REPO_ROOT, 'test', 'fixtures', 'runs-v1', 'engine-optimise');

/** The fixture's wizard state, loaded from a copy as the service loads it. */
async function savedWizard() {
  const ws = tempDir();
  cpSync(fixture, ws.dir, { recursive: true });
  try {
    return await loadWizardState(await openWorkspace(ws.dir), 'optimise-20261127-033430-a9e837');
  } finally {
    ws.cleanup();
  }
}

/** A router at #/optimise with the Runs route the page links to. */
async function optimiseRouter() {
  const router = createRouter({ history: createMemoryHistory(), routes: [{ path: '/runs', name: 'runs', component: { template: '<div />' } }, { path: '/:any(.*)', component: { template: '<div />' } }] });
  await router.push('/optimise');
  return router;
}

describe("an engine wizard's saved message", () => {
  it('is shown with its control, bidi and invisible characters escaped', async () => {
    const saved = await savedWizard();
    const state = { ...saved, status: 'failed' as const, message: 'E_INTERNAL: done\x1b[2K\rall fine\u202eevil\u2064' };
    const router = await optimiseRouter();
    const shown = mount(WizardShown, { props: { trials: state.trials, live: false, state, status: 'failed' }, global: { plugins: [router, createPinia()], stubs: { Echarts: { props: ['option'], template: '<div />' }, TrialsChart: true, LimitsChart: true } } });
    const text = shown.text();
    expect(text).toContain('done\\x1b[2K\\rall fine\\u202eevil\\u2064');
    // eslint-disable-next-line no-control-regex -- what must not be there
    expect(text).not.toMatch(/[\x1b\r\u202e\u2064]/);
  });
});

describe("an engine wizard's saved reasons, findings and limits (re-attack 9)", () => {
  it('are shown with their control, bidi and invisible characters escaped, in every card and table', async () => {
    const saved = await savedWizard();
    const plant = '\x1b[2K\rfine\u202eevil\u17b4\u2028';
    const state = structuredClone(saved);
    state.diagnosis!.summary += plant;
    for (const f of state.diagnosis!.findings) f.text += plant;
    for (const t of state.trials) Object.assign(t, { why: t.why + plant, error: `E_DATA: bad${plant}`, change: { ...t.change, label: t.change.label + plant, hypothesis: t.change.hypothesis + plant } });
    for (const k of state.skipped) Object.assign(k, { why: k.why + plant, change: { ...k.change, label: k.change.label + plant } });
    state.limits!.summary += plant;
    const router = await optimiseRouter();
    const shown = mount(WizardShown, { props: { trials: state.trials, live: false, state, status: 'completed' }, global: { plugins: [router, createPinia()], stubs: { Echarts: { props: ['option'], template: '<div />' }, TrialsChart: true } } });
    const text = shown.text();
    // Diagnosis, each finding, each trial's why, error, label and hypothesis, each skipped change's label and why, the limits.
    const escaped = text.split('\\x1b[2K\\rfine\\u202eevil\\u17b4\\u2028').length - 1;
    expect(escaped).toBe(1 + state.diagnosis!.findings.length + 4 * state.trials.length + 2 * state.skipped.length + 1);
    expect(text).not.toMatch(/\x1b|\r|\u202e|\u17b4|\u2028/); // eslint-disable-line no-control-regex -- what must not be there
  });
});

describe('an engine wizard stopped before its baseline', () => {
  it('says so, where it said "Measuring the baseline…" after the cancel; while it runs it still says that', async () => {
    const saved = await savedWizard();
    const state = { ...saved, baseline: null, diagnosis: null, limits: null, trials: [], status: 'cancelled' as const };
    const router = await optimiseRouter();
    const shown = (live: boolean) =>
      mount(WizardShown, { props: { trials: [], live, state, status: live ? 'running' : 'cancelled' }, global: { plugins: [router, createPinia()], stubs: { Echarts: { props: ['option'], template: '<div />' }, TrialsChart: true, LimitsChart: true } } }).text();
    expect(shown(false)).toContain('It stopped before its baseline was measured.');
    expect(shown(false)).not.toContain('Measuring the baseline');
    expect(shown(true)).toContain('Measuring the baseline…');
  });
});
