// Issue 13: `trainbench report` on real CPU runs (two benchmarks, a batch-size search, a training run on Fashion-MNIST).
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { DOMParser } from '@xmldom/xmldom';
import MarkdownIt from 'markdown-it';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { BatchSearchResult } from '../../src-main/api/batch-size';
import { TRIAL_OUTCOME_WORDS } from '../../src-main/api/batch-size';
import type { EngineBenchmarkResult } from '../../src-main/api/benchmark-result';
import { PHASE_NAMES_WITH_OTHER } from '../../src-main/api/benchmark';
import { formatValue } from '../../src-main/api/charts/theme';
import type { ReportDetail } from '../../src-main/api/reports';
import { ReportDetailSchema, stripBlockMarkers } from '../../src-main/api/reports';
import { ciLevel, intervalLevel, orderIntervalCoverage } from '../../src-main/api/order-interval';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { batchSearchRun, benchmarkRun, cli, trainRun } from './report-fixture';

const ws = tempDir();
const outDir = path.join(ws.dir, '..', `${path.basename(ws.dir)}-out`);
beforeAll(requireBuilt);
afterAll(() => {
  ws.cleanup();
  rmSync(outDir, { recursive: true, force: true });
});

const runJson = (id: string) => JSON.parse(readFileSync(path.join(ws.dir, 'runs', id, 'run.json'), 'utf8')) as { result: unknown };

/** The rows of the first table after `marker`, as cells. */
function tableAfter(markdown: string, marker: string): string[][] {
  const at = markdown.indexOf(marker);
  expect(at, `no ${marker} in the report`).toBeGreaterThanOrEqual(0);
  const lines = markdown.slice(at).split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[][] = [];
  for (let i = start; i < lines.length && lines[i].startsWith('|'); i++) {
    rows.push(lines[i].slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim()));
  }
  return rows;
}

function rowOf(rows: string[][], name: string): string[] {
  const row = rows.find((r) => r[0] === name);
  expect(row, `no row ${name}`).toBeDefined();
  return row as string[];
}

function parseSvg(text: string) {
  const errors: string[] = [];
  const doc = new DOMParser({ onError: (level, msg) => { if (level !== 'warning') errors.push(msg); } }).parseFromString(text, 'image/svg+xml');
  expect(errors).toEqual([]);
  return doc;
}

function svgTexts(text: string): string[] {
  const doc = parseSvg(text);
  return Array.from(doc.getElementsByTagName('text')).map((t) => t.textContent ?? '');
}

describe('trainbench report (CPU runs on Fashion-MNIST)', () => {
  let ids: { base: string; attempt: string; search: string; train: string };
  let report: ReportDetail & { exported: { dir: string; files: string[] } };
  let dir: string;
  let markdown: string;

  beforeAll(async () => {
    const base = await benchmarkRun(ws.dir);
    const attempt = await benchmarkRun(ws.dir, ['--batch-size', '128']);
    const search = await batchSearchRun(ws.dir);
    const train = await trainRun(ws.dir);
    ids = { base, attempt, search, train };
    const out = await cli(ws.dir, ['report', base, attempt, search, train, '--out', outDir, '--json']);
    report = JSON.parse(out) as typeof report;
    ReportDetailSchema.parse(report);
    dir = path.join(ws.dir, path.dirname(report.summary.path));
    markdown = readFileSync(path.join(ws.dir, report.summary.path), 'utf8');
  }, 300_000);

  it('is an ADR with the sections in order, one attempt per later benchmark and per search', () => {
    expect(report.summary.id).toMatch(/^0001-training-performance-of-mlp-on-fashion-mnist/);
    const headings = markdown.split('\n').filter((l) => /^#{1,3} /.test(l));
    expect(headings[0]).toBe(`# 1. ${report.summary.title}`);
    expect(headings.filter((h) => h.startsWith('## '))).toEqual([
      '## Status',
      '## Context',
      '## How to reproduce',
      '## Baseline metrics and phase breakdown',
      '## Physical limits',
      '## Attempts',
      '## Decision',
      '## Consequences',
    ]);
    const attempts = headings.filter((h) => h.startsWith('### Attempt'));
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toContain(ids.attempt);
    // Settings, models and times in words: no config key, spec JSON or ISO stamp in text meant for people.
    expect(attempts[0]).toContain('batch size 64 → 128');
    expect(markdown).toContain('It changes the training recipe (batch size)');
    expect(markdown).toMatch(/model: MLP, input 28x28, hidden layers 256-128, 10 classes; data /);
    expect(markdown).toMatch(/finished \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
    expect(markdown).not.toMatch(/batchSize|"family"|T\d\d:\d\d:\d\d/);
    expect(attempts[1]).toContain(`batch-size search (\`${ids.search}\`)`);
    for (const part of ['**Objective**', '**Configuration**', '**Hypothesis**', '**Results**', '**Analysis**', '**Conclusion**']) {
      expect(markdown.split(part).length - 1, part).toBe(2);
    }
  });

  it('has well-formed tables: every row has as many cells as its header', () => {
    const lines = markdown.split('\n');
    let width = 0;
    let tables = 0;
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i].startsWith('|')) {
        width = 0;
        continue;
      }
      const cells = lines[i].slice(1, -1).split(/(?<!\\)\|/).length;
      if (width === 0) {
        width = cells;
        tables++;
        expect(lines[i + 1]).toMatch(/^\| (:--|--:)( \| (:--|--:))* \|$/);
      } else expect(cells, `line ${i + 1}: ${lines[i]}`).toBe(width);
    }
    expect(tables).toBeGreaterThanOrEqual(8);
  });

  it('links only files that exist beside it, in the workspace and in the --out copy', () => {
    const links = [...markdown.matchAll(/!?\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThanOrEqual(6);
    for (const link of links) {
      expect(link).not.toMatch(/^(\/|[a-z]+:)/); // relative, so the folder renders on a code host
      expect(existsSync(path.join(dir, link)), link).toBe(true);
      expect(existsSync(path.join(outDir, link)), link).toBe(true);
    }
    expect(report.exported.files.sort()).toEqual(readdirSync(outDir).sort());
    expect(report.figures.map((f) => f.name).sort()).toEqual(links.filter((l) => l.endsWith('.svg')).sort());
  });

  it("says a search recommending the baseline's own batch changes nothing, and claims no gain from its one trial", async () => {
    const recommended = (runJson(ids.search).result as BatchSearchResult).recommended;
    expect(recommended).not.toBeNull();
    const same = await benchmarkRun(ws.dir, ['--batch-size', String(recommended)]);
    const out = JSON.parse(await cli(ws.dir, ['report', same, ids.search, '--json'])) as typeof report;
    const text = readFileSync(path.join(ws.dir, out.summary.path), 'utf8');
    expect(text).toContain(`No change: the search recommends batch ${formatValue(recommended as number)}, the batch the baseline already uses.`);
    expect(text).toContain(`batch ${formatValue(recommended as number)} recommended by the batch-size search, the baseline's own: nothing to change.`);
    expect(text).not.toMatch(/Recommended batch|not yet measured with repetitions|one trial, no CI/);
    // The search's learning-rate advice is from the batch it was given, not for the baseline that already has this batch.
    expect(text).toContain(`the baseline already trains with batch ${formatValue(recommended as number)}, so its learning rate stays as it is.`);
  }, 120_000);

  it("shows the baseline's figures exactly as its run file holds them", () => {
    const r = runJson(ids.base).result as EngineBenchmarkResult;
    const metrics = tableAfter(markdown, '## Baseline metrics');
    // Both benchmarks measured alike: the protocol is said once (a report once said it twice in one sentence).
    expect(markdown).toContain('Each benchmark ran 3 repetitions of 5 + 30 steps (each repetition a fresh trainer).');
    expect(rowOf(metrics, 'samples/s, median of repetitions')[1]).toBe(formatValue(r.samplesPerSecCi.median));
    // The interval's level is what its repetitions cover: 95% from 6 on, less below (75.0% for 3), said in the row's name.
    expect(intervalLevel(r.samplesPerSecCi)).toBe(ciLevel(orderIntervalCoverage(r.repeat)));
    expect(rowOf(metrics, `samples/s, ${ciLevel(orderIntervalCoverage(r.repeat))} CI`)[1]).toBe(`${formatValue(r.samplesPerSecCi.low)} to ${formatValue(r.samplesPerSecCi.high)}`);
    expect(rowOf(metrics, 'step time, steady state (ms)')[1]).toBe(formatValue(r.stepTime.steadyStateMeanMs));
    expect(rowOf(metrics, 'step time, wall-clock mean incl. warm-up (ms)')[1]).toBe(formatValue(r.stepTime.wallClockMeanMs));
    expect(rowOf(metrics, 'steps per epoch')[1]).toBe(formatValue(r.target.stepsPerEpoch));
    expect(rowOf(metrics, 'predicted epoch, from steady state (s)')[1]).toBe(formatValue(r.target.predictedEpochSeconds.fromSteadyState));
    expect(rowOf(metrics, 'training memory, measured (MB)')[1]).toBe(formatValue(r.target.memory.measured.total / 1e6));
    expect(rowOf(metrics, 'host CPU load, mean')[1]).toBe(formatValue(r.telemetry.cpuMean, '%'));
    const phases = tableAfter(markdown, 'Where the steady-state step goes');
    for (const p of PHASE_NAMES_WITH_OTHER) expect(rowOf(phases, p)[1]).toBe(`${formatValue(r.phasesMs[p])} (${formatValue(r.phasesPercent[p], '%')})`);
  });

  it("shows the attempt's and the search's figures as their run files hold them", () => {
    const b = runJson(ids.base).result as EngineBenchmarkResult;
    const a = runJson(ids.attempt).result as EngineBenchmarkResult;
    const results = tableAfter(markdown.slice(markdown.indexOf('### Attempt 1')), '**Results**').filter((r) => r[0] === 'samples/s, median');
    expect(results[0].slice(1, 3)).toEqual([formatValue(b.samplesPerSecCi.median), formatValue(a.samplesPerSecCi.median)]);
    const s = runJson(ids.search).result as BatchSearchResult;
    const trials = tableAfter(markdown.slice(markdown.indexOf('### Attempt 2')), '**Results**');
    expect(trials.slice(2).map((row) => row.slice(0, 3))).toEqual(
      s.trials.map((t) => [formatValue(t.batchSize), TRIAL_OUTCOME_WORDS[t.outcome], t.samplesPerSec === null ? '-' : formatValue(t.samplesPerSec)]),
    );
    // Outcomes in words, as the Batch size page says them: a UI walk read "E_OOM" in an ADR.
    expect(trials.slice(2).map((row) => row[1])).not.toContain('E_OOM');
    expect(markdown).toContain(s.verdict);
  });

  it('gives the exact commands that measure each run again', () => {
    expect(markdown).toContain('trainbench benchmark-training --model mlp --data fashion-mnist --device cpu --precision fp32 --batch-size 128 ');
    expect(markdown).toContain('trainbench find-batch-size --model mlp --data fashion-mnist --device cpu --memory-limit 67108864 --headroom 0.1 --steps 5');
    expect(markdown).toContain(`trainbench report ${ids.base} ${ids.attempt} ${ids.search} ${ids.train}`);
  });

  it('draws every chart as strict XML with the series the app draws', () => {
    for (const f of report.figures) parseSvg(readFileSync(path.join(dir, f.name), 'utf8'));
    const phases = svgTexts(readFileSync(path.join(dir, 'phase-breakdown.svg'), 'utf8'));
    for (const p of PHASE_NAMES_WITH_OTHER) expect(phases).toContain(p);
    expect(phases.filter((t) => /^\d\. mlp cpu b(64|128)$/.test(t))).toHaveLength(2);
    const search = svgTexts(readFileSync(path.join(dir, `batch-size-${ids.search}.svg`), 'utf8'));
    // A CPU search: what was measured is the engine process's peak as the OS counted it (issue 38).
    for (const series of ['samples/s', 'predicted MiB', 'process peak MiB']) expect(search).toContain(series);
    const loss = svgTexts(readFileSync(path.join(dir, `loss-${ids.train}.svg`), 'utf8'));
    expect(loss).toEqual(expect.arrayContaining(['loss', 'accuracy']));
    expect(report.figures.some((f) => f.name === `telemetry-host-cpu-${ids.base}.svg`)).toBe(true);
  });

  it('renders in markdown-it with raw HTML off: no HTML passes through, and the markers are stripped for the preview', () => {
    const md = new MarkdownIt({ html: false });
    const tokens = md.parse(stripBlockMarkers(markdown), {});
    const flat = tokens.flatMap((t) => [t, ...(t.children ?? [])]);
    expect(flat.filter((t) => t.type === 'html_block' || t.type === 'html_inline')).toEqual([]);
    const html = md.render(stripBlockMarkers(markdown));
    expect(html).not.toContain('tb:begin');
    expect(html).toContain('<table>');
    expect((html.match(/<img /g) ?? []).length).toBe(report.figures.length);
    // Unstripped, the markers are escaped to text, never passed through as HTML.
    expect(md.render(markdown)).toContain('&lt;!-- tb:begin status --&gt;');
  });

  it('says so when a run recorded no telemetry, instead of failing', async () => {
    const copy = `${ids.base}-notelemetry`;
    cpSync(path.join(ws.dir, 'runs', ids.base), path.join(ws.dir, 'runs', copy), { recursive: true });
    for (const f of readdirSync(path.join(ws.dir, 'runs', copy))) if (f.startsWith('telemetry')) rmSync(path.join(ws.dir, 'runs', copy, f));
    const out = JSON.parse(await cli(ws.dir, ['report', copy, '--json'])) as ReportDetail;
    const text = readFileSync(path.join(ws.dir, out.summary.path), 'utf8');
    expect(text).toContain(`Telemetry of \`${copy}\`: No telemetry was recorded for this run.`);
    expect(text).toContain(`\`${copy}\` recorded no telemetry, so its GPU and CPU load are unknown.`);
    expect(out.figures.some((f) => f.name.startsWith('telemetry-'))).toBe(false);
    expect(text).toContain('No attempts: only the baseline benchmark was run');
  });

  it('leaves out a run that did not complete, saying why, and refuses when nothing is left', async () => {
    const failed = `${ids.base}-failed`;
    cpSync(path.join(ws.dir, 'runs', ids.base), path.join(ws.dir, 'runs', failed), { recursive: true });
    const file = path.join(ws.dir, 'runs', failed, 'run.json');
    const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    delete record.result;
    writeFileSync(file, JSON.stringify({ ...record, id: failed, status: 'failed', error: { code: 'E_OOM', message: 'out of memory at batch 4096' } }));
    const out = JSON.parse(await cli(ws.dir, ['report', ids.base, failed, '--json'])) as ReportDetail;
    const why = `Run ${failed} (benchmark) is failed (E_OOM: out of memory at batch 4096), so it has no results to report; it is left out.`;
    expect(out.notes).toContain(why);
    expect(readFileSync(path.join(ws.dir, out.summary.path), 'utf8')).toContain(`> ${why}`);
    expect(out.summary.runIds).toEqual([ids.base]);
    await expect(cli(ws.dir, ['report', failed])).rejects.toThrow(`none of the runs ${failed} can be written up: ${why}`);
    await expect(cli(ws.dir, ['report', ids.train.replace(/.$/, 'z'), ids.base])).rejects.toThrow(/there is no run/);
  });

  it('writes up a data-loader benchmark: every setting measured, the chart, and the command', async () => {
    await cli(ws.dir, ['benchmark-dataloader', '--dataset', 'fashion-mnist-train', '--workers', '0,1', '--seconds', '0.3', '--json']);
    const runs = JSON.parse(await cli(ws.dir, ['runs', '--json'])) as { id: string; kind: string }[];
    const loader = runs.find((r) => r.kind === 'loader-benchmark')?.id as string;
    const out = JSON.parse(await cli(ws.dir, ['report', loader, '--json'])) as ReportDetail;
    const text = readFileSync(path.join(ws.dir, out.summary.path), 'utf8');
    const r = (runJson(loader) as { result: { cached: { workers: number; samplesPerSec: number; latencyP95Ms: number }[]; dataset: string } }).result;
    const rows = tableAfter(text, '#### Data-loader benchmark');
    expect(rows.slice(2).map((row) => [row[0], row[1], row[3], row[6]])).toEqual(r.cached.map((x) => ['cached', String(x.workers), formatValue(x.samplesPerSec), formatValue(x.latencyP95Ms)]));
    expect(text).toContain(`trainbench benchmark-dataloader --dataset fashion-mnist-train --batch-size 256 --workers 0,1 --prefetch 2 --sample-ratio 1 --seconds 0.3 --device cpu`);
    expect(out.summary.title).toBe(`Loading ${r.dataset}`);
    const svg = svgTexts(readFileSync(path.join(ws.dir, path.dirname(out.summary.path), `loader-${loader}.svg`), 'utf8'));
    expect(svg).toEqual(expect.arrayContaining(['cached', '0 workers', '1 worker']));
  });

  it('refuses runs it cannot write up, naming them', async () => {
    await expect(cli(ws.dir, ['report', 'no-such-run'])).rejects.toThrow(/there is no run no-such-run in the workspace/);
    await expect(cli(ws.dir, ['report', ids.base, '--sections', 'status,verdict'])).rejects.toThrow(/--sections takes a comma-separated list of status, context.*not "verdict"/);
  });
});
