// @vitest-environment happy-dom
// Issue 26 items 3-4 in the app: a script benchmark's floors beside its step (how each was measured, or why not,
// one click away) and its energy per sample, or why it has none.
import { mount } from '@vue/test-utils';
import { describe, expect, it } from 'vitest';

import type { ScriptBenchmarkResult } from '../../src-main/api/benchmark-result';
import { SCRIPT_ENERGY_WINDOW } from '../../src-main/api/utilisation-words';
import { CPU_COPY_MISSING, scriptFloors } from '../../src-main/core/stats/limits';
import { CPU_ENERGY_MISSING } from '../../src-main/core/telemetry/energy';
import BenchmarkResults from '../../src-renderer/components/benchmarks/BenchmarkResults.vue';

const peak = { gflops: 50_000, shape: '4096^3 tf32', how: 'torch.mm on cuda:0, best of 5' };
const copy = { bytesPerBatch: 200_960, seconds: 20e-6, how: '2 tensor(s) of the first training batch, pinned host to cuda:0, CUDA events, best of 5 after a warm-up' };

function result(over: Partial<ScriptBenchmarkResult>, own: Partial<ScriptBenchmarkResult['target']> = {}): ScriptBenchmarkResult {
  const base = {
    runId: 'r1',
    device: 'cuda:0',
    batchSize: 64,
    warmupSteps: 10,
    steps: 100,
    repeat: 3,
    samplesPerSecCi: { low: 21_000, median: 22_000, high: 22_500 },
    stepTime: { steadyStateMeanMs: 2.9, wallClockMeanMs: 5.4, note: '' },
    findings: [],
    ...over,
    target: { kind: 'script', command: { kind: 'script', command: ['python3', 'train.py'], cwd: '/work', env: {} }, worldSize: 1, dataWait: { rank: 0, msPerStep: 0.8, percent: 29.7 }, ...own },
  };
  return base as unknown as ScriptBenchmarkResult;
}

describe('the Script benchmarks table', () => {
  it('shows the floors per step with how far the step is from each, and the energy per sample', () => {
    const floors = scriptFloors({ stepMs: 2.9, samplesPerStep: 64, forwardFlopsPerSample: 1e6, flopsMissing: '', peak, peakMissing: '', copy, copyMissing: '' });
    const energy = { joulesPerSample: 0.00578, samplesPerJoule: 173, meanPowerW: 128, seconds: 1.04 };
    const w = mount(BenchmarkResults, { props: { scripts: [result({ energy, energyMissing: null }, { floors })] } });
    const f = w.get('[data-testid="script-benchmark-floors-r1"]');
    expect(f.get('summary').text()).toBe('Floors per step: compute 0.00384 ms (step 755.2x) · copy 0.02 ms (step 145.0x) · data not measured');
    expect(f.findAll('li').map((li) => li.text())[1]).toBe(`copy: 200,960 bytes per batch at 10 GB/s (${copy.how}) = 0.02 ms`);
    expect(f.text()).toContain('The host-to-device copy floor is the highest measured');
    // The launch's telemetry runs on past the measured steps: the figure says so.
    expect(w.get('[data-testid="script-benchmark-energy-r1"]').attributes('title')).toBe(`How: ${SCRIPT_ENERGY_WINDOW}.`);
    expect(w.get('[data-testid="script-benchmark-energy-r1"]').text()).toBe('Energy: 5.78 mJ of GPU energy per sample (173 samples/J) at 128 W mean GPU power over 1.0 s of measured steps');
  });

  it('on the CPU says why there is no copy floor and no energy; an older run shows neither', () => {
    const floors = scriptFloors({ stepMs: 12, samplesPerStep: 64, forwardFlopsPerSample: 1e6, flopsMissing: '', peak, peakMissing: '', copy: null, copyMissing: CPU_COPY_MISSING });
    const w = mount(BenchmarkResults, { props: { scripts: [result({ device: 'cpu', energy: null, energyMissing: CPU_ENERGY_MISSING }, { floors }), result({ runId: 'old' })] } });
    expect(w.get('[data-testid="script-benchmark-floors-r1"]').text()).toContain(`copy: not measured: ${CPU_COPY_MISSING}`);
    expect(w.get('[data-testid="script-benchmark-energy-r1"]').text()).toBe(`Energy: not measured: ${CPU_ENERGY_MISSING}`);
    expect(w.find('[data-testid="script-benchmark-floors-old"]').exists()).toBe(false);
    expect(w.find('[data-testid="script-benchmark-energy-old"]').exists()).toBe(false);
  });
});
