// @vitest-environment happy-dom
// Issue 41, F1 in the app: the command, working directory and environment a person confirms before a run, and a
// saved benchmark's command, cwd and title, come from run files too: their control characters are shown escaped
// (a CR, ESC or bidi mark must not make them read as something else), and the command is quoted as a shell reads it.
import { mount } from '@vue/test-utils';
import { describe, expect, it } from 'vitest';

import type { ScriptBenchmarkResult } from '../../src-main/api/benchmark-result';
import BenchmarkResults from '../../src-renderer/components/benchmarks/BenchmarkResults.vue';
import ReportList from '../../src-renderer/components/reports/ReportList.vue';
import RunConfigPanel from '../../src-renderer/components/runs/RunConfigPanel.vue';
import ScriptConfirm from '../../src-renderer/components/script/ScriptConfirm.vue';

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
    expect(rows).toContain('target.cwd/tmp/x\\r/home/me/project');
    expect(rows).toContain('target.env.NOTEok\\u202eyp.live');
    expect(rows.find((r) => r.startsWith('target.command'))).toContain('evil.py\\x1b[2K\\rtrain.py');
  });
});
