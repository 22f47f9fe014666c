// @vitest-environment happy-dom
// A reload of a running wizard's page (#/optimise?wizard=<id>) re-attaches to its job while the area still reads
// its past list. A CI run cancelled the wizard before that list came back: the area then opened the linked wizard
// again as a saved one, and that wiped the "Cancelled after 1 trial" notice (the card said cancelled, nothing else).
import { flushPromises, mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { describe, expect, it } from 'vitest';
import { createMemoryHistory, createRouter } from 'vue-router';

import { BenchmarkOptionsSchema } from '../../src-main/api/benchmark';
import { OptimiseConfigSchema, WizardStateSchema } from '../../src-main/api/optimise';
import type { CallOutcome } from '../../src-main/api/bridge';
import { useJobsStore } from '../../src-renderer/stores/jobs';
import { optimiseFormValues, optimiseRequest } from '../../src-renderer/view-models/optimise-form';
import OptimiseView from '../../src-renderer/views/OptimiseView.vue';
import { fail, installFakeClient, ok } from './fake-client';

const ID = '20261206-120000-abcdef';

describe('Optimise after a reload', () => {
  it('keeps the cancel notice of the wizard it re-attached to when its past list answers after the wizard ended', async () => {
    const pinia = createPinia();
    setActivePinia(pinia);
    const request = optimiseRequest(optimiseFormValues('mlp', { data: 'fashion-mnist', device: 'cpu' }), ID).request!;
    let status: 'running' | 'cancelled' = 'running';
    const state = () =>
      WizardStateSchema.parse({
        schemaVersion: 2, jobId: ID, request, status, runIds: ['optimise-run'], baseline: null, diagnosis: null, limits: null,
        best: OptimiseConfigSchema.parse({ options: BenchmarkOptionsSchema.parse({}), readFrom: 'cache' }), trials: [], skipped: [], batchSearch: null,
        exhausted: [], final: null, message: status === 'cancelled' ? 'optimisation cancelled before its baseline' : null, updatedAt: '2026-12-06T12:00:00.000Z', seconds: 3,
      });
    const info = { jobId: ID, method: 'optimise.start', kind: 'optimise', target: 'engine', request, startedAt: '2026-12-06T12:00:00.000Z', cancelling: false, events: [] };
    // The area's list of past wizards answers only when the test says (a loaded machine: it came after the end).
    let answerList: (o: CallOutcome) => void = () => undefined;
    const list = new Promise<CallOutcome>((resolve) => (answerList = resolve));
    const fake = installFakeClient((m) => {
      if (m === 'jobs.list') return ok(status === 'running' ? [info] : []);
      if (m === 'jobs.cancel') return ok({ cancelled: true });
      if (m === 'runs.list') return list;
      if (m === 'optimise.state') return ok(state());
      if (m === 'datasets.list' || m === 'models.list') return ok([]);
      return fail('E_BAD_INPUT', `no ${m} here`);
    });
    useJobsStore().start();
    const router = createRouter({ history: createMemoryHistory(), routes: [{ path: '/optimise', name: 'optimise', component: OptimiseView }] });
    await router.push(`/optimise?wizard=${ID}`);
    const view = mount(OptimiseView, { global: { plugins: [pinia, router], stubs: { OptimiseProgress: true, WizardShown: true, PastOptimisations: true } } });
    await expect.poll(() => view.get('[data-testid="opt-cancel"]').attributes('disabled')).toBeUndefined();
    await view.get('[data-testid="opt-cancel"]').trigger('click');
    status = 'cancelled';
    fake.emit('jobs.ended', { jobId: ID, method: 'optimise.start', kind: 'optimise', target: 'engine', ok: false, error: { code: 'E_CANCELLED', message: 'optimisation cancelled' } });
    await expect.poll(() => view.find('[data-testid="opt-error"]').exists()).toBe(true);
    answerList(ok([]));
    await flushPromises();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await flushPromises();
    expect(view.get('[data-testid="opt-error"]').text()).toMatch(/^Cancelled before the baseline was measured in full/);
    view.unmount();
  });
});
