// Serve mode answers requests concurrently, and the CLI may write reports beside the app:
// report numbers, saves, removes and exports must not interleave into a broken folder.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import { ReportGenerateRequestSchema } from '../../src-main/api/reports';
import { ReportService } from '../../src-main/core/reports/report-service';
import { createReport, type ReportContent } from '../../src-main/core/reports/report-store';
import { openWorkspace, type Workspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

function content(title: string): ReportContent {
  const svg = '<svg xmlns="http://www.w3.org/2000/svg"/>';
  return {
    title,
    runIds: ['r1'],
    sections: [],
    markdown: `# 1. ${title}\n\n![phases](phases.svg)\n`,
    figures: [{ figure: { name: 'phases.svg', title: 'phases', alt: 'phase breakdown', runId: 'r1' }, svg }],
    notes: [],
    blocks: {},
  };
}

let t: { dir: string; cleanup(): void };
let ws: Workspace;
beforeEach(async () => {
  t = tempDir();
  ws = await openWorkspace(t.dir);
});
afterEach(() => t.cleanup());

const numbers = () => readdirSync(ws.resolve('reports')).filter((d) => /^\d{4}-/.test(d)).map((d) => d.slice(0, 4)).sort();

describe('report numbers and concurrent changes', () => {
  it('leaves no folder behind when a report cannot be written whole (re-attack 15 found 8 half-made ones listed)', async () => {
    const broken = content('Broken');
    // A figure in a folder that is not there: the write fails after the report's folder was made.
    broken.figures = [{ ...broken.figures[0], figure: { ...broken.figures[0].figure, name: 'missing/phases.svg' } }];
    await expect(createReport(ws, broken)).rejects.toThrow();
    expect(readdirSync(ws.resolve('reports'))).toEqual([]);
    // The number is free for the next report.
    expect((await createReport(ws, content('Next'))).summary.id).toBe('0001-next');
  });

  it('is not stopped by a claim left behind (or planted) at any number, and leaves that claim alone (issue 23)', async () => {
    mkdirSync(path.join(ws.resolve('reports'), '.claim-9999'));
    mkdirSync(path.join(ws.resolve('reports'), '.claim-0001'));
    await createReport(ws, content('aa'));
    await createReport(ws, content('bb'));
    // 0001 is taken by the stale claim: the next free numbers are used.
    expect(numbers()).toEqual(['0002', '0003']);
    expect(readdirSync(ws.resolve('reports')).filter((d) => d.startsWith('.claim-')).sort()).toEqual(['.claim-0001', '.claim-9999']);
  });

  it('gives reports created at once distinct, consecutive numbers whatever their titles, and leaves no claim behind', async () => {
    await Promise.all(['aa', 'bb', 'cc', 'dd', 'aa'].map((title) => createReport(ws, content(title))));
    expect(numbers()).toEqual(['0001', '0002', '0003', '0004', '0005']);
    expect(readdirSync(ws.resolve('reports')).filter((d) => d.startsWith('.'))).toEqual([]);
  });

  it('keeps numbers distinct under many creations at once, round after round', async () => {
    // A creator that scanned before another claimed, made its folder and released a number used to
    // take the same number (seen once in CI with five at once); it now looks again after claiming.
    for (let round = 0; round < 8; round++) {
      const before = numbers().length;
      await Promise.all(Array.from({ length: 16 }, (_, i) => createReport(ws, content(`round ${round} report ${i}`))));
      const all = numbers();
      expect(all.length).toBe(before + 16);
      expect(new Set(all).size).toBe(all.length);
    }
    expect(numbers().at(-1)).toBe(String(8 * 16).padStart(4, '0'));
  });

  it('takes turns between a save and a remove sent together: the report is either whole or gone', async () => {
    const service = new ReportService(ws);
    for (let i = 0; i < 5; i++) {
      const { summary } = await createReport(ws, content(`race ${i}`));
      const [save, remove] = await Promise.allSettled([service.save(summary.id, 'edited'), service.remove(summary.id)]);
      expect(save.status).toBe('fulfilled');
      expect(remove.status).toBe('fulfilled');
      expect(existsSync(ws.resolve(path.join('reports', summary.id)))).toBe(false);
    }
    expect(await service.list()).toEqual([]);
  });

  it('takes changes from windows in turn: one window\'s 30 queued saves do not keep another\'s waiting (re-attack 19)', async () => {
    const service = new ReportService(ws);
    const { summary } = await createReport(ws, content('turns'));
    const busy = {};
    const other = {};
    const done: string[] = [];
    const theirs = Array.from({ length: 30 }, (_, i) => service.save(summary.id, `theirs ${i}`, busy).then(() => done.push(`theirs ${i}`)));
    const ours = service.save(summary.id, 'ours', other).then(() => done.push('ours'));
    await Promise.all([...theirs, ours]);
    // One of theirs had started and one more was in line before ours came: ours third, not 31st.
    expect(done.indexOf('ours')).toBe(2);
    // Still one change at a time: the file holds the last save that finished.
    expect(readFileSync(ws.resolve(path.join('reports', summary.id, `${summary.id}.md`)), 'utf8')).toBe(done.at(-1));
  });

  it('refuses to export into the folders the workbench manages or the workspace root, naming the folder', async () => {
    const service = new ReportService(ws);
    const { summary } = await createReport(ws, content('exported'));
    const other = await createReport(ws, content('other'));
    for (const dir of [`reports/${other.summary.id}`, 'runs/r1', 'datasets', 'optimise/x', '.', 'runs/../reports/y']) {
      const err = await service.export(summary.id, dir).catch((e: unknown) => e);
      expect(err, dir).toBeInstanceOf(ApiError);
      expect((err as ApiError).message, dir).toMatch(/^export to ".*" refused: (the workspace root|reports\/|runs\/|datasets\/|optimise\/) holds what the workbench manages/);
    }
    expect(readdirSync(ws.resolve(path.join('reports', other.summary.id))).sort()).toEqual(['0002-other.md', 'phases.svg', 'report.json']);
    const ok = await service.export(summary.id, 'exports/adr');
    expect(ok.files).toEqual(['0001-exported.md', 'phases.svg']);
  });

  it('refuses a title with control or bidirectional-override characters', () => {
    for (const title of ['a\u0000b', 'evil\u202Etxt.exe', 'line\nbreak']) {
      const parsed = ReportGenerateRequestSchema.safeParse({ runIds: ['r1'], title });
      expect(parsed.success, JSON.stringify(title)).toBe(false);
    }
    expect(ReportGenerateRequestSchema.safeParse({ runIds: ['r1'], title: 'Où va le pas — 1,024 × 2' }).success).toBe(true);
  });
});
