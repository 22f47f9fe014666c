// @vitest-environment happy-dom
// A UI walk: a script run that failed before its first optimizer step showed "0 optimizer steps · – after 5
// warm-up steps · step no data" and "unknown · batch – · ... 1 process(es)". It now says in one sentence that
// nothing was measured, leaves out the unknown batch, and counts processes in words.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { mount } from '@vue/test-utils';
import { describe, expect, it } from 'vitest';

import type { RunDetail } from '../../src-main/api/training';
import RunKindResult from '../../src-renderer/components/runs/RunKindResult.vue';

const FIXTURE = path.join(__dirname, '../fixtures/runs-v1/script-train/runs/20261127-033436-9fd31b/run.json');

function detail(change: (result: Record<string, unknown>) => void): RunDetail {
  const record = JSON.parse(readFileSync(FIXTURE, 'utf8')) as { result: Record<string, unknown> };
  change(record.result);
  return { summary: { id: '20261127-033436-9fd31b', kind: 'train', status: 'failed', title: 'a script', createdAt: '2026-11-27T03:34:36Z' }, record, events: [], telemetry: [] } as unknown as RunDetail;
}
const stubs = { Echarts: { template: '<div />' }, ScriptOutput: { template: '<div />' } };

describe("a script run's result", () => {
  it('says plainly that nothing was measured when no optimizer step was seen', () => {
    const w = mount(RunKindResult, {
      props: {
        run: detail((r) => {
          Object.assign(r, { steps: 0, batchSize: null, phasesMs: null, dataWait: null, lastLoss: null });
          delete r.samplesPerSec;
          Object.assign(r.stepTime as object, { steadyStateMeanMs: null, wallClockMeanMs: null });
        }),
      },
      global: { stubs },
    });
    expect(w.get('[data-testid="run-script-summary"]').text()).toBe('No optimizer step was seen, so nothing was measured: the output below shows how far the command got.');
    const facts = w.get('[data-testid="run-script-result"] .muted').text();
    expect(facts).not.toContain('batch');
    expect(facts).toMatch(/ 1 process, /);
  });

  it('keeps its figures when it trained', () => {
    const w = mount(RunKindResult, { props: { run: detail(() => {}) }, global: { stubs } });
    expect(w.get('[data-testid="run-script-summary"]').text()).toMatch(/^30 optimizer steps · [\d,.]+ samples\/s after 5 warm-up steps/);
    expect(w.get('[data-testid="run-script-result"] .muted').text()).toContain('batch 64');
  });
});
