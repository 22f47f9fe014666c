// @vitest-environment happy-dom
// Issue 41, F1 in the app: the command, working directory and environment a person confirms before a run, and a
// saved benchmark's command, cwd and title, come from run files too: their control characters are shown escaped
// (a CR, ESC or bidi mark must not make them read as something else), and the command is quoted as a shell reads it.
import { flushPromises, mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { describe, expect, it } from 'vitest';

import type { ScriptBenchmarkResult } from '../../src-main/api/benchmark-result';
import type { CheckResult } from '../../src-main/api/check';
import type { DatasetSummary } from '../../src-main/api/datasets';
import type { RunDetail } from '../../src-main/api/training';
import BenchmarkResults from '../../src-renderer/components/benchmarks/BenchmarkResults.vue';
import DatasetTable from '../../src-renderer/components/datasets/DatasetTable.vue';
import ReportEditor from '../../src-renderer/components/reports/ReportEditor.vue';
import ReportList from '../../src-renderer/components/reports/ReportList.vue';
import RunConfigPanel from '../../src-renderer/components/runs/RunConfigPanel.vue';
import SpeedVerdict from '../../src-renderer/components/runs/SpeedVerdict.vue';
import ScriptConfirm from '../../src-renderer/components/script/ScriptConfirm.vue';
import { useDatasetsStore } from '../../src-renderer/stores/datasets';
import { useReportsStore } from '../../src-renderer/stores/reports';
import { installFakeClient, ok } from './fake-client';

// eslint-disable-next-line no-control-regex -- control characters are what it finds
const RAW_CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/;
const command = ['python3', 'evil.py\x1b[2K\rtrain.py'];
const cwd = '/tmp/x\r/home/me/project';
const env = { NOTE: 'ok\u202eyp.live' };

describe('a planted command in the app', () => {
  it('"Run this command?" shows the command, cwd and env values escaped', () => {
    const w = mount(ScriptConfirm, { props: { request: { target: { kind: 'script', command, cwd, env }, overrides: {} } } });
    const shown = ['confirm-command', 'confirm-cwd', 'confirm-env'].map((t) => w.get(`[data-test="${t}"]`).text());
    for (const text of shown) expect(text).not.toMatch(RAW_CONTROL);
    expect(shown).toEqual(["python3 $'evil.py\\x1b[2K\\rtrain.py'", '/tmp/x\\r/home/me/project', 'NOTE=ok\\u202eyp.live']);
  });

  it("a saved script benchmark's command and cwd are shown escaped", () => {
    const script = {
      runId: 'r1', device: 'cpu', batchSize: 8, warmupSteps: 1, steps: 2, repeat: 1, findings: [],
      samplesPerSecCi: { low: 1, median: 1, high: 1 }, stepTime: { steadyStateMeanMs: 1, wallClockMeanMs: 1, note: '' },
      target: { kind: 'script', command: { kind: 'script', command, cwd, env }, worldSize: 1, dataWait: { rank: 0, msPerStep: 0.8, percent: 29.7 } },
    } as unknown as ScriptBenchmarkResult;
    const w = mount(BenchmarkResults, { props: { scripts: [script] } });
    const row = w.get('[data-testid="script-benchmark-r1"]').text();
    expect(row).not.toMatch(RAW_CONTROL);
    expect(row).toContain("python3 $'evil.py\\x1b[2K\\rtrain.py'");
    expect(row).toContain('in /tmp/x\\r/home/me/project');
  });

  it("a report's title from its file is shown escaped in the list", () => {
    const report = { id: '0001-x', number: 1, title: 'Fast\x1b[8mhidden', path: 'reports/0001-x/report.md', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', runIds: [], problem: null };
    const w = mount(ReportList, { props: { reports: [report], openId: null, disabled: false } });
    expect(w.text()).not.toMatch(RAW_CONTROL);
    expect(w.text()).toContain('Fast\\x1b[8mhidden');
  });

  it("a run's configuration panel shows its command, cwd and env escaped", () => {
    const w = mount(RunConfigPanel, { props: { config: { target: { kind: 'script', command, cwd, env } } } });
    const rows = w.findAll('tr').map((tr) => tr.text());
    for (const row of rows) expect(row).not.toMatch(RAW_CONTROL);
    // Each row: the setting in words, its key in run.json, its value.
    expect(rows).toContain('working directorytarget.cwd/tmp/x\\r/home/me/project');
    expect(rows).toContain('environment NOTEtarget.env.NOTEok\\u202eyp.live');
    expect(rows.find((r) => r.startsWith('commandtarget.command'))).toContain('evil.py\\x1b[2K\\rtrain.py');
  });
});

describe('text planted in workspace files, in the app (the re-attack: F1 gaps)', () => {
  // eslint-disable-next-line no-control-regex -- control characters are what it finds
  const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

  it("the Datasets page shows a tampered manifest's name escaped, where it names the dataset and its split", async () => {
    const pinia = createPinia();
    setActivePinia(pinia);
    const dataset = (id: string, name: string, split: DatasetSummary['split']): DatasetSummary => ({
      id, name, records: 80, bytes: 1600, shards: 1, fields: [{ name: 'x', dtype: 'float32', shape: [4], recordBytes: 16, stats: null }],
      createdAt: '2026-12-03T00:00:00.000Z', sourceDescription: 'flowers.csv', problem: null, split,
    });
    const split = { fraction: 0.2, seed: 0, sourceRecords: 100 };
    useDatasetsStore().list = [
      dataset('flowers-0123456789ab', 'flowers\u202eexe.txt\u2028x', { part: 'train', ...split, other: 'flowers-test-0123456789ab' }),
      dataset('flowers-test-0123456789ab', 'flowers-test', { part: 'test', ...split, other: 'flowers-0123456789ab' }),
    ];
    const w = mount(DatasetTable, { global: { plugins: [pinia] } });
    await w.findAll('[data-testid="remove"]')[0].trigger('click');
    expect(w.text()).not.toMatch(UNSHOWABLE);
    expect(w.text()).toContain('flowers\\u202eexe.txt\\u2028x');
    expect(w.get('[data-testid="dataset-table"]').findAll('[data-testid="dataset-split"]')[1].text()).toContain('held out of flowers\\u202eexe.txt\\u2028x');
    expect(w.get('[role="group"]').attributes('aria-label')).toBe('Remove flowers\\u202eexe.txt\\u2028x?');
  });

  it("a report's notes, which may quote a failed run's error, are shown escaped", () => {
    const pinia = createPinia();
    setActivePinia(pinia);
    installFakeClient(() => ok(null));
    const summary = { id: '0001-x', number: 1, title: 'x', path: 'reports/0001-x/0001-x.md', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', runIds: [], problem: null };
    useReportsStore().current = { summary, markdown: '# 1. x\n', figures: [], sections: [], notes: ['Run r (benchmark) is failed (E_DATA: boom\x1b[2K\u202eok)'] };
    const w = mount(ReportEditor, { global: { plugins: [pinia] } });
    const notes = w.get('[data-testid="report-notes"]').text();
    expect(notes).not.toMatch(UNSHOWABLE);
    expect(notes).toContain('boom\\x1b[2K\\u202eok');
  });

  it("Compare's speed verdict names the runs' planted hostnames escaped", async () => {
    const verdictText = 'could not decide: the saved run was measured under other conditions (host "vm" then, "rig\u202e2\u2028b" now)';
    const side = { runId: 'r', title: 't', createdAt: '2026-01-01T00:00:00Z', samplesPerSec: [1, 2] };
    const result: CheckResult = { against: side, now: side, differences: [], verdict: { outcome: 'undecided', exitCode: 2, change: null, tolerance: 0.05, text: verdictText } };
    installFakeClient((m) => (m === 'runs.compareSpeed' ? ok(result) : ok(null)));
    const run = (id: string) => ({ summary: { id, kind: 'benchmark', status: 'completed' } }) as unknown as RunDetail;
    const w = mount(SpeedVerdict, { props: { runs: [run('a'), run('b')], names: ['a', 'b'] } });
    await flushPromises();
    const verdict = w.get('[data-testid="compare-speed-verdict"]').text();
    expect(verdict).not.toMatch(UNSHOWABLE);
    expect(verdict).toContain('"rig\\u202e2\\u2028b" now');
  });
});
