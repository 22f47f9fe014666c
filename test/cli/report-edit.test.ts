// Issue 13: editing, regenerating, exporting and removing a report of real CPU runs, through the contract's router.
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FigureNameSchema, type ReportDetail, type ReportExportResult } from '../../src-main/api/reports';
import { apiMethods } from '../../src-main/api/methods';
import { createServices, type Services } from '../../src-main/core/services';
import { HOST_ENTRY, requireBuilt } from '../helpers/repo';
import { rejection } from '../helpers/rejection';
import { tempDir } from '../helpers/temp-dir';
import { batchSearchRun, benchmarkRun } from './report-fixture';

const ws = tempDir();
const outside = tempDir('trainbench-outside-');
let services: Services;
let base: string;
let search: string;
const dispatch = <T>(method: string, params: unknown) => services.router.dispatch(method, params) as Promise<T>;

beforeAll(async () => {
  requireBuilt();
  base = await benchmarkRun(ws.dir);
  search = await batchSearchRun(ws.dir);
  services = await createServices({ workspaceDir: ws.dir, engine: { entry: HOST_ENTRY } });
}, 300_000);
afterAll(async () => {
  await services?.dispose();
  ws.cleanup();
  outside.cleanup();
});

describe('reports.save and reports.regenerate', () => {
  it("keep the person's text outside the generated blocks and redraw the blocks", async () => {
    const report = await dispatch<ReportDetail>('reports.generate', { runIds: [base, search], title: 'Batch size for the MLP' });
    expect(report.summary.id).toBe('0001-batch-size-for-the-mlp');
    expect(report.markdown.startsWith('# 1. Batch size for the MLP\n')).toBe(true);
    const mine = 'We ran this because the epoch felt slow. This paragraph is mine.';
    const edited = report.markdown
      .replace('## Status\n\nProposed\n', '## Status\n\nAccepted\n')
      .replace('## Decision\n', `## Decision\n\n${mine}\n`)
      // An edit inside a generated block: regenerate replaces it, and says so.
      .replace('**Hypothesis**: none recorded; a search', '**Hypothesis**: bigger is better; a search');
    const saved = await dispatch<ReportDetail>('reports.save', { id: report.summary.id, markdown: edited });
    expect(saved.markdown).toBe(edited);
    expect((await dispatch<ReportDetail>('reports.get', { id: report.summary.id })).markdown).toBe(edited);

    const again = await dispatch<ReportDetail>('reports.regenerate', { id: report.summary.id });
    expect(again.markdown).toContain('## Status\n\nAccepted\n');
    expect(again.markdown).toContain(mine);
    expect(again.markdown).not.toContain('bigger is better');
    expect(again.markdown).toContain('**Hypothesis**: none recorded; a search');
    expect(again.notes.some((n) => n.includes(`your edits inside the generated block "attempt-${search}" were replaced`))).toBe(true);
    // Everything else is exactly what was generated.
    expect(again.markdown.replace('Accepted', 'Proposed').replace(`\n${mine}\n`, '')).toBe(report.markdown);
    expect(again.figures.map((f) => f.name)).toEqual(report.figures.map((f) => f.name));
  });

  it('leave a block the person deleted deleted', async () => {
    const report = await dispatch<ReportDetail>('reports.generate', { runIds: [base], sections: ['status', 'limits', 'decision'] });
    expect(report.summary.number).toBe(2);
    expect(report.markdown.split('\n').filter((l) => l.startsWith('## '))).toEqual(['## Status', '## Physical limits', '## Decision']);
    const withoutLimits = report.markdown.replace(/<!-- tb:begin limits -->[\s\S]*<!-- tb:end limits -->\n/, 'I removed the limits.\n');
    await dispatch('reports.save', { id: report.summary.id, markdown: withoutLimits });
    const again = await dispatch<ReportDetail>('reports.regenerate', { id: report.summary.id });
    expect(again.markdown).toBe(withoutLimits);
    expect(again.notes).toContain('block "limits" was deleted by hand and is not added back (delete the report and generate it again to get it)');
  });

  it('leave out, with a note, a run deleted since the report was made', async () => {
    const copy = `${base}-copy`;
    cpSync(path.join(ws.dir, 'runs', base), path.join(ws.dir, 'runs', copy), { recursive: true });
    const report = await dispatch<ReportDetail>('reports.generate', { runIds: [base, copy], sections: ['status'] });
    expect(report.summary.runIds).toEqual([base, copy]);
    rmSync(path.join(ws.dir, 'runs', copy), { recursive: true });
    const again = await dispatch<ReportDetail>('reports.regenerate', { id: report.summary.id });
    expect(again.summary.runIds).toEqual([base]);
    expect(again.notes.some((n) => n.startsWith(`Run ${copy} cannot be read any more (there is no run ${copy} in the workspace`))).toBe(true);
    expect((await rejection(dispatch('reports.generate', { runIds: [base, copy] }))).message).toMatch(`there is no run ${copy} in the workspace`);
    await dispatch('reports.remove', { id: report.summary.id });
  });

  it('serve the figures by name and nothing else', async () => {
    const list = await dispatch<{ id: string; problem: string | null }[]>('reports.list', {});
    expect(list.map((r) => [r.id, r.problem])).toEqual([
      ['0002-training-performance-of-mlp-on-fashion-mnist', null],
      ['0001-batch-size-for-the-mlp', null],
    ]);
    const detail = await dispatch<ReportDetail>('reports.get', { id: '0001-batch-size-for-the-mlp' });
    const name = detail.figures[0].name;
    const { svg } = await dispatch<{ svg: string }>('reports.figure', { id: detail.summary.id, name });
    expect(svg).toBe(readFileSync(path.join(ws.dir, 'reports', detail.summary.id, name), 'utf8'));
    for (const bad of ['../report.json', 'report.json', '.hidden.svg', 'a/b.svg', '../../runs/x.svg']) {
      const err = await rejection(dispatch('reports.figure', { id: detail.summary.id, name: bad }));
      expect(err.code, bad).toBe('E_BAD_REQUEST');
    }
    expect((await rejection(dispatch('reports.figure', { id: detail.summary.id, name: 'nope.svg' }))).message).toMatch(/has no figure nope\.svg \(it has /);
    expect((await rejection(dispatch('reports.get', { id: '..' }))).code).toBe('E_BAD_REQUEST');
    expect((await rejection(dispatch('reports.get', { id: 'runs' }))).message).toBe('"runs" is not a report id (NNNN-title, e.g. 0001-mlp-benchmark)');
    expect((await rejection(dispatch('reports.get', { id: '0099-none' }))).message).toMatch(/^there is no report 0099-none in /);
  });
});

describe('reports.generate at the same time', () => {
  it('gives each report its own number and folder', async () => {
    const [a, b] = await Promise.all([
      dispatch<ReportDetail>('reports.generate', { runIds: [base], title: 'Twin', sections: ['status'] }),
      dispatch<ReportDetail>('reports.generate', { runIds: [base], title: 'Twin', sections: ['status'] }),
    ]);
    expect(a.summary.number).not.toBe(b.summary.number);
    for (const r of [a, b]) {
      expect(r.summary.id).toBe(`${String(r.summary.number).padStart(4, '0')}-twin`);
      expect(r.markdown.startsWith(`# ${r.summary.number}. Twin\n`)).toBe(true);
      await dispatch('reports.remove', { id: r.summary.id });
    }
  });
});

describe('answers the renderer can read', () => {
  it("match each method's result schema, as the UI's client checks them", async () => {
    const generated = await dispatch<ReportDetail>('reports.generate', { runIds: [base, search], sections: ['context', 'attempts'] });
    const id = generated.summary.id;
    const answers: [keyof typeof apiMethods, unknown][] = [
      ['reports.generate', generated],
      ['reports.list', await dispatch('reports.list', {})],
      ['reports.get', await dispatch('reports.get', { id })],
      ['reports.figure', await dispatch('reports.figure', { id, name: generated.figures[0].name })],
      ['reports.regenerate', await dispatch('reports.regenerate', { id })],
      ['reports.export', await dispatch('reports.export', { id, dir: 'exports/schema' })],
      ['runs.trace', await dispatch('runs.trace', { id: base })],
      ['reports.remove', await dispatch('reports.remove', { id })],
    ];
    for (const [method, answer] of answers) {
      const parsed = apiMethods[method].result.safeParse(answer);
      expect(parsed.success, `${method}: ${parsed.success ? '' : parsed.error.message}`).toBe(true);
    }
  });
});

describe('reports.export', () => {
  const id = '0001-batch-size-for-the-mlp';

  it('copies the markdown and its figures into a folder of the workspace', async () => {
    const out = await dispatch<ReportExportResult>('reports.export', { id, dir: 'exports/adr' });
    expect(out.dir).toBe(path.join(ws.dir, 'exports', 'adr'));
    expect(readdirSync(out.dir).sort()).toEqual(out.files.sort());
    expect(out.files).toContain(`${id}.md`);
    expect(out.files).not.toContain('report.json');
  });

  it('refuses every path that leaves the workspace, by name or through a link', async () => {
    symlinkSync(outside.dir, path.join(ws.dir, 'escape'));
    for (const dir of ['..', '../elsewhere', outside.dir, 'exports/../../x', 'escape', 'escape/deeper']) {
      const err = await rejection(dispatch('reports.export', { id, dir }));
      expect(err.code, dir).toBe('E_BAD_INPUT');
      expect(err.message, dir).toMatch(/outside the workspace/);
    }
    expect(readdirSync(outside.dir)).toEqual([]);
    // Its own folder, like every folder the workbench manages, is refused (a chosen folder is checked the same way below).
    expect((await rejection(dispatch('reports.export', { id, dir: `reports/${id}` }))).message).toMatch(/reports\/ holds what the workbench manages/);
  });

  it('to a chosen folder is refused without the desktop dialog, and uses it where there is one', async () => {
    const err = await rejection(dispatch('reports.exportToChosenFolder', { id }));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toBe('choosing a folder needs the desktop app; here, export to a folder of the workspace (reports.export with dir) or copy the markdown');

    const chosen = path.join(outside.dir, 'chosen');
    mkdirSync(chosen);
    const asked: string[] = [];
    let answer: string | null = chosen;
    const desktop = await createServices({ workspaceDir: ws.dir, engine: { entry: HOST_ENTRY }, chooseFolder: async (name) => (asked.push(name), answer) });
    try {
      const out = await desktop.router.dispatch('reports.exportToChosenFolder', { id }) as ReportExportResult;
      expect(asked).toEqual([id]);
      expect(out.dir).toBe(chosen);
      expect(readdirSync(chosen).sort()).toEqual(out.files.sort());
      answer = null;
      expect(await desktop.router.dispatch('reports.exportToChosenFolder', { id })).toEqual({ dir: null, files: [] });
    } finally {
      await desktop.dispose();
    }
  });

  it('removes a report folder, and only report folders', async () => {
    const removable = await dispatch<ReportDetail>('reports.generate', { runIds: [search], sections: ['attempts'] });
    expect(await dispatch('reports.remove', { id: removable.summary.id })).toEqual({ removed: removable.summary.id });
    expect(existsSync(path.join(ws.dir, 'reports', removable.summary.id))).toBe(false);
    expect((await rejection(dispatch('reports.remove', { id: 'runs' }))).code).toBe('E_BAD_INPUT');
    expect(existsSync(path.join(ws.dir, 'runs', base))).toBe(true);
  });
});

describe('a run whose id holds "_", "." and upper case (a folder copied in by hand)', () => {
  it('gets figure names and blocks the report schema takes, distinct from the run it was copied from, and regenerates', async () => {
    const odd = `${search.toUpperCase()}_copy.2`;
    cpSync(path.join(ws.dir, 'runs', search), path.join(ws.dir, 'runs', odd), { recursive: true });
    const report = await dispatch<ReportDetail>('reports.generate', { runIds: [odd, search] });
    const names = report.figures.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(FigureNameSchema.safeParse(name).success, name).toBe(true);
    const own = report.figures.filter((f) => f.runId === odd).map((f) => f.name);
    expect(own.length).toBeGreaterThan(0);
    for (const name of own) {
      const { svg } = await dispatch<{ svg: string }>('reports.figure', { id: report.summary.id, name });
      expect(svg, name).toContain('</svg>');
    }
    // Its blocks carry markers the parser finds again: regenerating gives the same markdown, with no note.
    expect(report.markdown).toContain(`<!-- tb:begin attempt-${own[0].replace(/^batch-size-|\.svg$/g, '')} -->`);
    const again = await dispatch<ReportDetail>('reports.regenerate', { id: report.summary.id });
    expect(again.markdown).toBe(report.markdown);
    rmSync(path.join(ws.dir, 'runs', odd), { recursive: true });
  }, 120_000);
});
