// @vitest-environment happy-dom
// "Apply": a real wizard result's final settings into the New run form through the route, and the
// Optimise components drawing that result (happy-dom, the app's router).
import { readFileSync } from 'node:fs';

import { mount } from '@vue/test-utils';
import { createPinia } from 'pinia';
import { describe, expect, it } from 'vitest';
import { createMemoryHistory, createRouter } from 'vue-router';

import { measurementLabel } from '../../src-main/api/measurement-words';
import { BUILTIN_MODELS, ModelSpecSchema } from '../../src-main/api/model-spec';
import { OptimiseRequestSchema } from '../../src-main/api/optimise';
import type { EngineOptimiseResult } from '../../src-main/api/optimise-result';
import { engineWizard } from '../helpers/target-detail';
import { applyQuery, builtinModelOf, newRunValuesFromQuery } from '../../src-renderer/components/optimise/apply-values';
import DiagnosisCards from '../../src-renderer/components/optimise/DiagnosisCards.vue';
import FinalCard from '../../src-renderer/components/optimise/FinalCard.vue';
import PastOptimisations from '../../src-renderer/components/optimise/PastOptimisations.vue';
import TrialTable from '../../src-renderer/components/optimise/TrialTable.vue';
import { recipeValues, trainRequest } from '../../src-renderer/components/runs/new-run-values';
import type { PastOptimisation } from '../../src-renderer/stores/optimise';

// A run that kept one change, recorded with: trainbench optimise --model mlp --data fashion-mnist --loader-workers 0 --prefetch 1 --steps 10 --warmup-steps 2 --repeat 3 --max-trials 3 --threads 1 --json
const recorded = (): EngineOptimiseResult => {
  return engineWizard(JSON.parse(readFileSync('test/fixtures/optimise/cpu-mlp-result.json', 'utf8')));
};
/** The target the recorded run optimised, as its request held it. */
/** The forms' model choices beyond the built-ins: none here (the sized and file cases: models-sized-forms.test.ts). */
const builtinsOnly = { datasets: [], models: [] };
const target = () => OptimiseRequestSchema.parse({ target: { spec: BUILTIN_MODELS.mlp, data: { kind: 'fashion-mnist' } } }).target;

describe('Apply: final settings to the New run form', () => {
  it('carries the final configuration through the route into values the New run form accepts', () => {
    const r = recorded();
    const { query, blocked } = applyQuery(r.jobId, target(), r.target.final.config, builtinsOnly);
    expect(blocked).toBeNull();
    expect(query).toMatchObject({ new: '1', from: r.jobId, model: 'mlp', data: 'fashion-mnist', device: 'cpu', loaderWorkers: String(r.target.final.config.options.loaderWorkers) });
    // Through a URL and back, as the router does it.
    const url = new URLSearchParams(query!);
    const back = newRunValuesFromQuery(Object.fromEntries(url.entries()));
    expect(back?.from).toBe(r.jobId);
    expect(back?.notes).toEqual([]);
    const checked = trainRequest(back!.values);
    expect(checked.errors).toBeNull();
    const o = r.target.final.config.options;
    expect(checked.request?.options).toMatchObject({ batchSize: o.batchSize, accumulation: o.accumulation, loaderWorkers: o.loaderWorkers, prefetch: o.prefetch, seed: o.seed, precision: o.precision, device: o.device });
    // What the form does not set comes from the model's recipe (mlp: AdamW at 0.002).
    expect(back!.values.lr).toBe(recipeValues('mlp', { data: 'fashion-mnist', device: 'cpu' }).lr);
  });

  it('says which settings a New run cannot take over', () => {
    const r = recorded();
    const cuda = { ...r.target.final.config, readFrom: 'source' as const, options: { ...r.target.final.config.options, device: 'cuda:0', gpuPrefetch: 6, cudaGraph: true } };
    const { query } = applyQuery(r.jobId, target(), cuda, builtinsOnly);
    expect(query).toMatchObject({ gpuPrefetch: '6', cudaGraph: '1', readFrom: 'source', device: 'cuda:0' });
    expect(newRunValuesFromQuery(query!)?.notes).toEqual([
      "GPU prefetch 6 was not taken over: the New run form has no field for it (a run uses the engine's default)",
      'CUDA graphs were not taken over: the New run form has no field for them',
      'the optimisation read the data from its source files; a run always reads it through the cache',
    ]);
  });

  it('refuses what the form cannot choose, and names every malformed value', () => {
    const r = recorded();
    const own = { ...target(), spec: ModelSpecSchema.parse({ family: 'mlp', input: [28, 28], outputs: 10, hidden: [8] }) };
    expect(builtinModelOf(own.spec)).toBeNull();
    expect(builtinModelOf(target().spec)).toBe('mlp');
    expect(applyQuery(r.jobId, own, r.target.final.config, builtinsOnly).blocked).toMatch(/^the model \(its own mlp spec\) is neither a built-in, its family sized to this data, nor a spec file of the workspace now/);
    const idx = { ...target(), data: { kind: 'idx' as const, train: { images: '/data/x-images', labels: '/data/x-labels' } } };
    expect(applyQuery(r.jobId, idx, r.target.final.config, builtinsOnly).blocked).toMatch(/^the data \(idx\) was given to the CLI by path/);

    expect(newRunValuesFromQuery({ model: 'mlp' })).toBeNull();
    const typed = newRunValuesFromQuery({ new: '1', model: 'resnet50', data: '/etc/passwd', batchSize: 'lots', lr: '', precision: 'fp8', optimizer: 'lion', prefetch: ['2', '4'] });
    expect(typed?.values).toMatchObject({ model: 'mlp', data: 'fashion-mnist', batchSize: 64, prefetch: 4, precision: 'fp32', optimizer: 'adamw', lr: 0.002 });
    expect(typed?.notes).toEqual([
      'model "resnet50" is not a built-in (mlp, cnn, bottleneck_resnet), sized:<family> or a spec file with its family; the form keeps mlp',
      'data "/etc/passwd" is not fashion-mnist, example-board or dataset:<id>; the form keeps fashion-mnist',
      'batchSize "lots" is not a whole number; the form keeps 64',
      'lr "" is not a number; the form keeps 0.002',
      'precision "fp8" is not one of fp32, bf16, fp16; the form keeps fp32',
      'optimizer "lion" is not one of sgd, adamw; the form keeps adamw',
    ]);
    // In range is the form's own check, which names the field.
    const zero = newRunValuesFromQuery({ new: '1', batchSize: '0' })!;
    expect(trainRequest(zero.values).errors).toEqual({ batchSize: 'must be at least 1 (0 given)' });
  });

  it('Apply navigates to the New run form with the final settings in the route', async () => {
    const r = recorded();
    const router = createRouter({ history: createMemoryHistory(), routes: [{ path: '/:any(.*)', component: { template: '<div />' } }] });
    await router.push('/optimise');
    const card = mount(FinalCard, { props: { jobId: r.jobId, target: target(), final: { ...r.final, config: r.target.final.config }, models: [] }, global: { plugins: [router, createPinia()] } });
    expect(card.get('[data-testid="opt-verdict"]').text()).toBe(r.final.verdict);
    expect(card.get('[data-testid="opt-final-settings"]').text()).toContain(`loader workers ${r.target.final.config.options.loaderWorkers}`);
    await card.get('[data-testid="opt-apply"]').trigger('click');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(router.currentRoute.value.path).toBe('/runs');
    expect(router.currentRoute.value.query).toMatchObject({ new: '1', from: r.jobId, loaderWorkers: String(r.target.final.config.options.loaderWorkers) });

    const own = mount(FinalCard, { props: { jobId: r.jobId, target: { ...target(), spec: ModelSpecSchema.parse({ family: 'mlp', input: [28, 28], outputs: 10, hidden: [8] }) }, final: { ...r.final, config: r.target.final.config }, models: [] }, global: { plugins: [router, createPinia()] } });
    expect(own.get('[data-testid="opt-apply"]').attributes('disabled')).toBeDefined();
    expect(own.get('[data-testid="opt-apply-blocked"]').text()).toMatch(/its own mlp spec/);
  });
});

describe('Optimise components', () => {
  it('the trial table shows each trial with its medians, CI, decision and why', () => {
    const r = recorded();
    const table = mount(TrialTable, { props: { trials: r.trials } });
    const rows = table.findAll('tbody tr');
    expect(rows).toHaveLength(r.trials.length);
    r.trials.forEach((t, i) => {
      expect(rows[i].attributes('data-decision')).toBe(t.decision);
      expect(rows[i].text()).toContain(t.change.label);
      expect(rows[i].text()).toContain(`${t.speedup!.median.toFixed(3)}x`);
      expect(rows[i].text()).toContain(`${t.speedup!.low.toFixed(3)}x–${t.speedup!.high.toFixed(3)}x`);
      expect(rows[i].text()).toContain(t.why);
      expect(rows[i].text().includes('kept')).toBe(t.kept);
    });
    // A batch change says what it does to the recipe.
    expect(rows[0].text()).toContain('scale the learning rate');
  });

  it('each diagnosis card names its number', () => {
    const r = recorded();
    const cards = mount(DiagnosisCards, { props: { diagnosis: r.diagnosis, baseline: r.baseline } });
    for (const f of r.diagnosis.findings) {
      const card = cards.get(`[data-testid="opt-finding-${f.id}"]`);
      // The number's name in words, never the JSON key (issue 27).
      expect(card.get('.name').text()).toBe(measurementLabel(f.measurement.name));
      expect(card.get('.name').text()).not.toMatch(/[a-z][A-Z]|\./);
      expect(card.text()).toContain(f.text);
      expect(card.get('.number').text()).toMatch(new RegExp(`^[\\d,.]+ ${f.measurement.unit}$`));
    }
    expect(cards.get('[data-testid="opt-baseline"]').text()).toContain(`noise floor ±${(100 * r.baseline.noiseFloor).toFixed(1)}%`);
  });

  it('the past list offers Resume only where the wizard can go on', async () => {
    const r = recorded();
    const entry = (id: string, status: PastOptimisation['status'], resumable: boolean): PastOptimisation => ({
      jobId: id,
      title: 'mlp on fashion-mnist',
      status,
      updatedAt: '2026-11-24T11:00:00.000Z',
      preset: 'balanced',
      trials: 1,
      kept: [],
      final: status === 'completed' ? r.final : null,
      message: null,
      resumable,
    });
    const list = mount(PastOptimisations, { props: { past: [entry('a', 'completed', false), entry('b', 'interrupted', true)], shown: null, busy: false } });
    expect(list.find('[data-testid="opt-resume-a"]').exists()).toBe(false);
    await list.get('[data-testid="opt-resume-b"]').trigger('click');
    await list.get('[data-testid="opt-past-a"]').trigger('click');
    // Resume does not also open the row it sits in.
    expect(list.emitted('resume')).toEqual([['b']]);
    expect(list.emitted('open')).toEqual([['a']]);
    expect(list.get('[data-testid="opt-past-a"]').text()).toContain(`${r.final.speedup.median.toFixed(3)}x`);
  });
});
