// @vitest-environment happy-dom
// Issue 40 in the app: the "Ranks at the collectives" panel of a script benchmark, in the Runs area's result and the
// Benchmarks area's table; absent for a job of one process. The chart itself is stubbed (no canvas here).
import { mount } from '@vue/test-utils';
import { describe, expect, it } from 'vitest';

import type { ScriptBenchmarkResult } from '../../src-main/api/benchmark-result';
import type { ScriptCollectives } from '../../src-main/api/collectives';
import BenchmarkResults from '../../src-renderer/components/benchmarks/BenchmarkResults.vue';
import RankCollectives from '../../src-renderer/components/runs/RankCollectives.vue';

const collectives: ScriptCollectives = {
  straggler: 1,
  phase: 'data',
  lateMs: 4.2,
  lastShare: [
    { rank: 0, share: 0.1, low: 0.03, high: 0.3 },
    { rank: 1, share: 0.9, low: 0.7, high: 0.97 },
  ],
  why: "rank 1 arrives last at 90% of 20 steps (95% interval 70%-97%, chance 50%), 4.20 ms after the others' median arrival; it spends longer than the others in waiting for data (its DataLoader)",
  steps: 20,
  exposedShare: 0.051,
  busBytesPerSec: 12.5e9,
  perStep: { count: 3, bytes: 25_000_000 },
  timing: 'bucket',
  timeline: {
    steps: [7, 8],
    ranks: [0, 1].map((rank) => ({ rank, marks: [7, 8].map((step) => ({ step, index: 0, arriveMs: rank ? 4 : 0, doneMs: 5 })) })),
    cut: 'not shown: collectives after the first 64 of a step',
  },
  clocks: [
    { rank: 0, node: 'node-a', offsetMs: 0, uncertaintyMs: 0.01 },
    { rank: 1, node: 'node-b', offsetMs: -0.42, uncertaintyMs: 0.12 },
  ],
};
const stubs = { global: { stubs: { Echarts: { props: ['option'], template: '<div class="chart-stub" />' } } } };

function scriptResult(runId: string, own: Partial<ScriptBenchmarkResult['target']>): ScriptBenchmarkResult {
  return {
    runId,
    title: `torchrun --nproc_per_node 2 /work/train.py --tag ${runId}`,
    device: 'cpu',
    batchSize: 32,
    warmupSteps: 3,
    steps: 20,
    repeat: 1,
    samplesPerSecCi: { low: 900, median: 1000, high: 1100 },
    stepTime: { steadyStateMeanMs: 30, wallClockMeanMs: 35, note: '' },
    findings: [],
    target: { kind: 'script', command: { kind: 'script', command: ['torchrun', 'train.py'], cwd: '/work', env: {} }, worldSize: 2, dataWait: { rank: 1, msPerStep: 4, percent: 12 }, ...own },
  } as unknown as ScriptBenchmarkResult;
}

describe('the Ranks at the collectives panel', () => {
  it('names the straggler and its phase, the costs, each rank\'s clock and node, the figure\'s rows and what it leaves out', () => {
    const w = mount(RankCollectives, { props: { collectives }, ...stubs });
    expect(w.get('h3').text()).toBe('Ranks at the collectives');
    expect(w.get('[data-testid="rank-collectives-verdict"]').text()).toBe(
      "Rank 1 is the straggler, late in waiting for data (its data loader): it arrives 4.2 ms after the others' median arrival at the collectives.",
    );
    const facts = w.get('[data-testid="rank-collectives-facts"]').text();
    expect(facts).toContain('5.1% of the step');
    expect(facts).toContain('12.5 GB/s all-reduce bus bandwidth');
    expect(facts).toContain('3 per step, 25 MB in all');
    const rows = w.findAll('[data-testid="rank-collectives-ranks"] tbody tr').map((r) => r.findAll('td').map((d) => d.text()));
    expect(rows).toEqual([
      ['0', 'node-a', '+0 ± 0.01 ms', '10% of steps (95% interval 3% to 30%)'],
      ['1 (straggler)', 'node-b', '−0.42 ± 0.12 ms', '90% of steps (95% interval 70% to 97%)'],
    ]);
    const chart = w.get('[data-testid="rank-collectives-timeline"]');
    expect(chart.attributes('data-rows')).toBe('2');
    expect(chart.attributes('aria-label')).toMatch(/^Timeline of the collectives of 2 ranks over steps 7 and 8, /);
    expect(w.get('[data-testid="rank-collectives-cut"]').text()).toBe('Not shown: collectives after the first 64 of a step.');
  });

  it('timed once a step, says the bandwidth was not measured and how it would be', () => {
    const w = mount(RankCollectives, { props: { collectives: { ...collectives, timing: 'step', busBytesPerSec: null } }, ...stubs });
    const facts = w.get('[data-testid="rank-collectives-facts"]').text();
    expect(facts).toContain('not measured: timed once a step (timing each bucket measures it, at a cost to small steps)');
    expect(facts).toContain('3 per step, 25 MB in all (one rank\'s), timed together once a step');
  });

  it('shows the all-reduce floor between the ranks where it was measured, with the job\'s share of it', () => {
    const floor = { bytes: 25_000_000, ms: 3.2, busBytesPerSec: 7.8125e9 };
    const w = mount(RankCollectives, { props: { collectives: { ...collectives, busBytesPerSec: 3.9e9, floor } }, ...stubs });
    expect(w.get('[data-testid="rank-collectives-floor"]').text()).toBe("7.81 GB/s bus bandwidth (25.0 MB all-reduced alone in 3.20 ms); the job's all-reduces reach 50% of it");
    // Timed once a step: the floor alone. Not measured (or a result from before it): no row.
    const step = mount(RankCollectives, { props: { collectives: { ...collectives, timing: 'step', busBytesPerSec: null, floor } }, ...stubs });
    expect(step.get('[data-testid="rank-collectives-floor"]').text()).toBe('7.81 GB/s bus bandwidth (25.0 MB all-reduced alone in 3.20 ms)');
    expect(mount(RankCollectives, { props: { collectives }, ...stubs }).find('[data-testid="rank-collectives-floor"]').exists()).toBe(false);
    const scaled = mount(RankCollectives, { props: { collectives: { ...collectives, scaling: { nodes: 2, oneNodeSamplesPerSec: 700, efficiency: 0.88 } } }, ...stubs });
    expect(scaled.get('[data-testid="rank-collectives-scaling"]').text()).toBe('88% (2 nodes: 1,232 samples/s; this node alone: 700), against the job on this node alone');
  });

  it('without a timeline says so, and shows no figure', () => {
    const w = mount(RankCollectives, { props: { collectives: { ...collectives, timeline: undefined } }, ...stubs });
    expect(w.find('[data-testid="rank-collectives-timeline"]').exists()).toBe(false);
    expect(w.text()).toContain('No timeline of the collectives was recorded for this run.');
  });

  it('in the Script benchmarks card: one panel per benchmark of several ranks (the newest open), none for one of one process', () => {
    const w = mount(BenchmarkResults, {
      props: { scripts: [scriptResult('old', { collectives: { ...collectives, straggler: null, phase: null, why: 'no straggler: too close to call' } }), scriptResult('one', {}), scriptResult('new', { collectives })] },
      ...stubs,
    });
    expect(w.find('[data-testid="script-benchmark-collectives-one"]').exists()).toBe(false);
    const old = w.get('[data-testid="script-benchmark-collectives-old"]');
    const fresh = w.get('[data-testid="script-benchmark-collectives-new"]');
    expect(old.attributes('open')).toBeUndefined();
    expect(fresh.attributes('open')).toBeDefined();
    expect(old.get('summary').text()).toBe('Ranks at the collectives of train.py --tag old (old): no straggler');
    expect(fresh.get('summary').text()).toBe('Ranks at the collectives of train.py --tag new (new): rank 1 is the straggler');
    expect(old.get('[data-testid="rank-collectives-verdict"]').text()).toBe('No straggler: too close to call.');
    // The summary names the panel: no second heading under it.
    expect(fresh.find('h3').exists()).toBe(false);
  });
});
