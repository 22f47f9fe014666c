// @vitest-environment happy-dom
// Issue 41, the re-attack of F1: a run's files are data from another rig. The Compare view's short name of a run
// comes from run.json (its model family); control and direction characters in it show escaped, in the tables, the
// caption and the speed verdict alike.
import { mount } from '@vue/test-utils';
import { describe, expect, it } from 'vitest';

import type { RunDetail } from '../../src-main/api/training';
import CompareRuns from '../../src-renderer/components/runs/CompareRuns.vue';

const run = (id: string, family: string) =>
  ({
    summary: { id, kind: 'train', title: `a run ${id}`, status: 'completed', createdAt: '2026-11-21T00:00:00Z' },
    record: { schemaVersion: 1, id, kind: 'train', status: 'completed', createdAt: '2026-11-21T00:00:00Z', config: { spec: { family } } },
    events: [],
    telemetry: [],
  }) as unknown as RunDetail;

describe('Compare runs, with names planted in run.json', () => {
  it('shows control and direction characters escaped wherever the name appears', () => {
    const w = mount(CompareRuns, {
      props: { runs: [run('20261121-000000-aaaaaa', 'mlp\u202egnp.exe'), run('20261121-000001-bbbbbb', 'cnn\u001b[2K\rok\u2028x')] },
      global: { stubs: { Echarts: { props: ['option'], template: '<div />' }, SpeedVerdict: { props: ['runs', 'names'], template: '<div class="verdict-stub">{{ names.join("|") }}</div>' } } },
    });
    const text = w.text();
    // No control, line-separator or direction character reaches the page (code points checked, no regex of them).
    const raw = [...text].filter((ch) => {
      const c = ch.codePointAt(0)!;
      return (c < 0x20 && c !== 0x0a) || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029 || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
    });
    expect(raw).toEqual([]);
    const headers = w.get('[data-testid="compare-results"] thead').text();
    expect(headers).toContain('mlp\\u202egnp.exe · aaaaaa');
    expect(headers).toContain('cnn\\x1b[2K\\rok\\u2028x · bbbbbb');
    expect(w.get('.verdict-stub').text()).toBe('mlp\\u202egnp.exe · aaaaaa|cnn\\x1b[2K\\rok\\u2028x · bbbbbb');
  });
});

describe('Compare runs without step curves', () => {
  // A UI walk compared two benchmarks and got three empty chart frames above the lines saying why.
  const stubs = { Echarts: { props: ['option'], template: '<div class="chart-stub" />' }, SpeedVerdict: { template: '<div />' } };
  const withSteps = (id: string) => {
    const r = run(id, 'mlp') as unknown as { events: unknown[] };
    r.events = [1, 2, 3].map((s) => ({ type: 'step', epoch: 1, epochs: 1, step: s, stepsPerEpoch: 3, globalStep: s, totalSteps: 3, loss: 1 / s, accuracy: 0.5, t: 1000 * s, samplesPerSec: 100 }));
    return r as unknown as RunDetail;
  };

  it('leaves out every chart no run has data for, and says why', () => {
    const w = mount(CompareRuns, { props: { runs: [run('20261121-000000-aaaaaa', 'mlp'), run('20261121-000001-bbbbbb', 'mlp')] }, global: { stubs } });
    expect(w.findAll('.chart-stub')).toHaveLength(0);
    expect(w.get('[data-testid="compare-missing"]').text()).toContain('no loss was recorded');
  });

  it('draws a chart as soon as one of the runs has its curve', () => {
    const w = mount(CompareRuns, { props: { runs: [withSteps('20261121-000000-aaaaaa'), run('20261121-000001-bbbbbb', 'mlp')] }, global: { stubs } });
    expect(w.findAll('[data-testid="compare-loss-chart"]')).toHaveLength(1);
    expect(w.findAll('[data-testid="compare-throughput-chart"]')).toHaveLength(1);
  });
});
