// Issue 27, item 6: the Runs list follows running jobs by itself, filters by kind, keeps a
// name, tags and notes per run across a reload, brings the opened run into view, and
// Compare puts the runs' results side by side with their samples/s over time.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import { LIVE_REFRESH_MS } from '../../src-renderer/stores/runs';
import { serveInChromium, SHOTS } from '../helpers/e2e';
import { CLI } from '../helpers/repo';

const run = promisify(execFile);
/** Older runs written by hand, listed below the CLI's (their ids sort first): enough to make the list longer than a screen. */
const FILLER_KINDS = ['optimise', 'batch-search', 'loader-benchmark', 'train'] as const;
const filler = (i: number) => `19990401-0000${String(i).padStart(2, '0')}-fill${String(i).padStart(2, '0')}`;
const FILLERS = 24;
/** A run of the user's own script (a training benchmark of it), and one whose notes.json was tampered with. */
const SCRIPT_RUN = '19990402-000000-script';
const TAMPERED = '19990403-000000-tampered';

const fx = serveInChromium({
  timeoutMs: 180_000,
  async prepare(workspace) {
    const cli = (...args: string[]) => run(process.execPath, [CLI, ...args, '--json', '--workspace', workspace]);
    await cli('train', '--model', 'mlp', '--max-steps', '40', '--lr', '0.002');
    await cli('train', '--model', 'mlp', '--max-steps', '60', '--batch-size', '128');
    await cli('benchmark-training', '--model', 'mlp', '--steps', '10', '--warmup-steps', '2', '--repeat', '2');
    const write = (id: string, kind: string, config: Record<string, unknown> = {}) => {
      mkdirSync(path.join(workspace, 'runs', id), { recursive: true });
      writeFileSync(
        path.join(workspace, 'runs', id, 'run.json'),
        JSON.stringify({ schemaVersion: RUN_SCHEMA_VERSION, id, kind, status: 'completed', createdAt: '1999-04-01T00:00:00.000Z', finishedAt: '1999-04-01T00:01:00.000Z', config }),
      );
    };
    for (let i = 0; i < FILLERS; i++) write(filler(i), FILLER_KINDS[i % FILLER_KINDS.length], { spec: { family: 'cnn' } });
    write(SCRIPT_RUN, 'benchmark', { target: { kind: 'script', command: ['python3', 'train.py', '--epochs', '1'] } });
    write(TAMPERED, 'train', { spec: { family: 'mlp' } });
    writeFileSync(path.join(workspace, 'runs', TAMPERED, 'notes.json'), JSON.stringify({ schemaVersion: 1, name: 'x'.repeat(5000), tags: [], notes: '', updatedAt: '1999-04-03T00:00:00.000Z' }));
  },
});

const rows = (page: Page) => page.locator('tr[data-testid^="run-"]');
const kindsShown = async (page: Page) => new Set(await rows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-kind'))));
/** Where an element's top is, relative to the visible part of the page's scrolling area, and how tall that part is. */
const placeOf = (el: Locator) =>
  el.evaluate((node) => {
    const main = node.closest('.shell__main') ?? document.scrollingElement!;
    const box = main.getBoundingClientRect();
    return { top: node.getBoundingClientRect().top - box.top, visible: Math.min(box.height, window.innerHeight) };
  });
/** In view: its top edge (its heading) is on screen, not above it and not below the fold. */
const inView = async (el: Locator) => {
  const { top, visible } = await placeOf(el);
  return top >= 0 && top < visible - 100;
};
const waitInView = (el: Locator) => expect.poll(() => inView(el), { timeout: 5000 }).toBe(true);

describe('Runs list', () => {
  it('filters by kind (a script run under its kind and under script), and finds runs by text', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    const all = 3 + FILLERS + 2;
    expect(await rows(page).count()).toBe(all);
    expect(await page.getByTestId('runs-filter-all').innerText()).toBe(`all ${all}`);
    await page.getByTestId('runs-filter-training').click();
    expect(await kindsShown(page)).toEqual(new Set(['train']));
    expect(await rows(page).count()).toBe(2 + FILLERS / 4 + 1);
    await page.getByTestId('runs-filter-benchmark').click();
    expect(await kindsShown(page)).toEqual(new Set(['benchmark']));
    expect(await rows(page).count()).toBe(2); // the CLI's and the script's
    await page.getByTestId('runs-filter-script').click();
    expect(await rows(page).count()).toBe(1);
    // Named short in the list (issue 27 item 10), the full title on hover and in the run.
    const scriptName = page.getByTestId(`run-${SCRIPT_RUN}`).getByTestId('run-name');
    expect(await scriptName.innerText()).toBe('train.py --epochs 1');
    expect(await scriptName.getAttribute('title')).toBe('training benchmark: script python3 train.py --epochs 1');
    for (const [key, kind] of [['batch-search', 'batch-search'], ['optimise', 'optimise'], ['loader', 'loader-benchmark']] as const) {
      await page.getByTestId(`runs-filter-${key}`).click();
      expect(await kindsShown(page), key).toEqual(new Set([kind]));
      expect(await rows(page).count()).toBe(FILLERS / 4);
    }
    expect(await page.getByTestId('runs-filter-loader').getAttribute('aria-checked')).toBe('true');
    await page.getByTestId('runs-search').fill('fill02');
    expect(await rows(page).count()).toBe(1);
    await page.getByTestId('runs-search').fill('nothing like this');
    expect(await page.getByTestId('runs-none-shown').innerText()).toBe('No loader runs match “nothing like this”.');
    await page.screenshot({ path: path.join(SHOTS, 'runs-filter-none.png') });
    await page.getByTestId('runs-search').fill('');
    await page.getByTestId('runs-filter-all').click();
    expect(await rows(page).count()).toBe(all);
    await page.getByTestId('runs-filter-script').click();
    await page.screenshot({ path: path.join(SHOTS, 'runs-filter-script.png') });
    // At 1024 px the chips wrap and the search moves below them: nothing runs off to the side.
    await page.setViewportSize({ width: 1024, height: 700 });
    await page.getByTestId('runs-filter-all').click();
    await page.getByTestId('runs-filter-all').evaluate((el) => el.closest('section')!.scrollIntoView({ block: 'start' }));
    expect(await page.locator('.shell__main').evaluate((main) => main.scrollWidth - main.clientWidth)).toBe(0);
    await page.screenshot({ path: path.join(SHOTS, 'runs-filter-1024.png') });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('edits a run\'s name, tags and notes, which a reload still shows; run.json is left as it was; a tampered notes file is named', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    const row = page.locator('tr[data-testid^="run-2"][data-kind="train"]').first();
    const id = (await row.getAttribute('data-testid'))!.slice('run-'.length);
    const runJson = readFileSync(path.join(fx.workspace, 'runs', id, 'run.json'), 'utf8');
    await row.click();
    const notes = page.getByTestId('run-notes');
    await notes.waitFor();
    expect(await page.getByTestId('run-notes-save').isDisabled()).toBe(true); // nothing changed yet
    await page.getByTestId('run-notes-name').fill('  baseline, lr 0.002 ');
    await page.getByTestId('run-notes-tags').fill('baseline, mlp, , baseline');
    await page.getByTestId('run-notes-text').fill('First run of the day.\nAdamW, batch 64.');
    await page.getByTestId('run-notes-save').click();
    await page.getByTestId('run-notes-saved').waitFor();
    expect(await page.getByTestId('run-detail').locator('h2').innerText()).toBe('baseline, lr 0.002');
    expect(await row.getByTestId('run-name').innerText()).toBe('baseline, lr 0.002');
    expect(await row.getByTestId('run-tag').allInnerTexts()).toEqual(['baseline', 'mlp']);
    expect(await page.getByTestId('run-notes-tags').inputValue()).toBe('baseline, mlp');
    await page.screenshot({ path: path.join(SHOTS, 'runs-notes-saved.png') });
    expect(JSON.parse(readFileSync(path.join(fx.workspace, 'runs', id, 'notes.json'), 'utf8'))).toMatchObject({
      schemaVersion: 1, name: 'baseline, lr 0.002', tags: ['baseline', 'mlp'], notes: 'First run of the day.\nAdamW, batch 64.',
    });
    expect(readFileSync(path.join(fx.workspace, 'runs', id, 'run.json'), 'utf8')).toBe(runJson);

    // Over a cap: the editor refuses to take more, so a forged request is what the server refuses.
    expect(await page.getByTestId('run-notes-name').getAttribute('maxlength')).toBe('120');
    await page.getByTestId('run-notes-tags').fill(Array.from({ length: 13 }, (_, i) => `t${i}`).join(', '));
    await page.getByTestId('run-notes-save').click();
    expect(await page.getByTestId('run-notes-error').innerText()).toMatch(/^(?!E_).*at most 12 tags/);
    // A tag too long is named, in words, before anything is sent (it read "bad request to runs.annotate: params.tags.2").
    await page.getByTestId('run-notes-tags').fill(`baseline, mlp, ${'x'.repeat(40)}`);
    await page.getByTestId('run-notes-save').click();
    expect(await page.getByTestId('run-notes-error').innerText()).toBe(`tag "${'x'.repeat(24)}…" (40 characters): a tag is at most 32 characters`);
    await page.getByTestId('run-notes-tags').fill('baseline, mlp, short');
    expect(await page.getByTestId('run-notes-error').count()).toBe(0);
    await page.getByTestId('run-notes-reset').click();
    expect(await page.getByTestId('run-notes-tags').inputValue()).toBe('baseline, mlp');

    // After a reload, by a link to the run: the same name, tags and notes, and the search finds it by a tag.
    await page.goto(`${fx.serve.url}#/runs?run=${id}`);
    await page.reload();
    await page.getByTestId('run-notes').waitFor();
    expect(await page.getByTestId('run-notes-name').inputValue()).toBe('baseline, lr 0.002');
    expect(await page.getByTestId('run-notes-text').inputValue()).toBe('First run of the day.\nAdamW, batch 64.');
    expect(await page.getByTestId(`run-${id}`).getAttribute('aria-selected')).toBe('true');
    await page.getByTestId('runs-search').fill('mlp');
    expect(await rows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-testid')))).toContain(`run-${id}`);

    await page.getByTestId('runs-search').fill('');
    await page.getByTestId(`run-${TAMPERED}`).click();
    await waitInView(page.getByTestId('run-detail'));
    expect(await page.getByTestId('run-notes-problem').innerText()).toMatch(/^Its notes file was not read: runs\/19990403-000000-tampered\/notes.json does not match its schema: .*name.*Saving writes a new one\.$/);
    expect(await page.getByTestId(`run-${TAMPERED}`).getByTestId('run-name').innerText()).toBe('mlp on data'); // the title, not the forged name
    await page.screenshot({ path: path.join(SHOTS, 'runs-notes-tampered.png') });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('brings the opened run into view, from a click far down the list and from a link', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    const last = page.getByTestId(`run-${filler(0)}`);
    await last.scrollIntoViewIfNeeded();
    await last.click();
    const detail = page.getByTestId('run-detail');
    await detail.waitFor();
    await waitInView(detail);
    await page.screenshot({ path: path.join(SHOTS, 'runs-opened-in-view.png') });

    const other = await browserPageAt(`${fx.serve.url}#/runs?run=${filler(5)}`);
    await other.getByTestId('run-detail').waitFor();
    await waitInView(other.getByTestId('run-detail'));
    expect(await other.getByTestId(`run-${filler(5)}`).getAttribute('aria-selected')).toBe('true');
    await other.close();
    // The same link copied into a new tab has no token (each tab keeps its own): the page says so, not "reconnecting" forever.
    const copied = new URL(fx.serve.url);
    copied.search = '';
    const bare = await fx.browser.newPage({ viewport: { width: 1280, height: 800 } });
    await bare.goto(`${copied.toString()}#/runs?run=${filler(5)}`);
    expect(await bare.getByTestId('transport-notice').innerText()).toMatch(/^This tab has no access token, so the workbench refuses it\. Open the address trainbench serve printed/);
    await bare.screenshot({ path: path.join(SHOTS, 'runs-link-without-token.png') });
    await bare.close();
    // A token the server does not take (it was started again since, a link of another server's): said in words, and
    // the tab stops reconnecting, where it showed "reconnecting" and "not connected (waited 10 s)" for ever.
    const stale = new URL(fx.serve.url);
    stale.searchParams.set('token', 'x'.repeat(32));
    const old = await fx.browser.newPage({ viewport: { width: 1280, height: 800 } });
    await old.goto(`${stale.toString()}#/runs`);
    await expect.poll(() => old.getByTestId('transport-notice').innerText(), { timeout: 10_000 }).toMatch(/^This tab's access token is not the one this Trainbench server uses/);
    await old.screenshot({ path: path.join(SHOTS, 'runs-stale-token.png') });
    await old.close();
    await page.close();
  }, 60_000);

  it('puts the compared runs\' results side by side, with samples/s over time', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    const cliRuns = page.locator('tr[data-testid^="run-2"]');
    for (const row of await cliRuns.all()) await row.locator('input[type="checkbox"]').check();
    await page.getByTestId('compare-start').click();
    const table = page.getByTestId('compare-results');
    await table.waitFor();
    await waitInView(page.getByTestId('compare')); // below a long list: brought into view
    await page.waitForTimeout(300); // let ECharts paint
    await page.screenshot({ path: path.join(SHOTS, 'compare-in-view.png') });
    const head = await table.locator('thead th').allInnerTexts();
    expect(head).toHaveLength(4);
    const cells = async (key: string) => (await page.getByTestId(`compare-result-${key}`).locator('td').allInnerTexts()).map((t) => t.replace(/\s*\(best\)$/, '').trim());
    // Newest first: the benchmark, then the two training runs (one of them named above, maybe).
    for (const v of (await cells('testAccuracy')).slice(1)) expect(v).toMatch(/^\d+\.\d\d%$/);
    for (const v of await cells('samplesPerSec')) expect(v).toMatch(/^[\d,]+$/);
    for (const v of await cells('wallSeconds')) expect(v).toMatch(/^\d+\.\d s$/);
    expect((await cells('steps')).slice(1)).toEqual(['60', '40']);
    expect(await table.locator('td[data-best]').count()).toBeGreaterThan(0);
    const chart = page.getByTestId('compare-throughput-chart');
    expect(await chart.getAttribute('aria-label')).toMatch(/^Samples\/s over time; .* mean [\d,]+, .* mean [\d,]+ samples\/s$/);
    expect(await chart.locator('canvas').count()).toBeGreaterThan(0);
    await page.waitForTimeout(300); // let ECharts paint
    await page.getByTestId('compare').screenshot({ path: path.join(SHOTS, 'compare-results.png') });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('follows a run started in another window without a click: listed as running, then as ended; no polling once nothing runs', async () => {
    const watcher = await fx.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const sent: string[] = [];
    watcher.on('websocket', (ws) => ws.on('framesent', (f) => sent.push(String(f.payload))));
    await watcher.goto(`${fx.serve.url}#/runs`);
    await watcher.getByTestId('runs-table').waitFor();
    const before = await rows(watcher).count();

    const starter = await browserPageAt(`${fx.serve.url}#/runs`);
    await starter.getByTestId('newrun-model').selectOption('mlp');
    await starter.getByTestId('newrun-epochs').fill('20'); // far longer than the test: it is cancelled
    await starter.getByTestId('newrun-start').click();
    await starter.getByTestId('live-run').waitFor();

    // The watcher lists it as running, and sees its step move, without anyone clicking there.
    await expect.poll(() => rows(watcher).count(), { timeout: 30_000 }).toBe(before + 1);
    const live = rows(watcher).first();
    await expect.poll(async () => live.getByTestId('run-status').innerText(), { timeout: 60_000 }).toMatch(/^running\s+at step [\d,]+ of 18,740/);
    const stepOf = async () => Number(/at step ([\d,]+)/.exec(await live.getByTestId('run-status').innerText())?.[1].replace(/,/g, '') ?? -1);
    const first = await stepOf();
    await expect.poll(stepOf, { timeout: 20_000 }).toBeGreaterThan(first);
    await watcher.bringToFront(); // a tab in the background paints no frame to take
    await watcher.screenshot({ path: path.join(SHOTS, 'runs-live-refresh.png') });

    await starter.getByTestId('live-cancel').click();
    await expect.poll(async () => live.getByTestId('run-status').innerText(), { timeout: 30_000 }).toMatch(/^cancelled/);
    await starter.close();
    await watcher.waitForTimeout(LIVE_REFRESH_MS + 500); // the refresh the job's end asked for
    const listed = sent.filter((f) => f.includes('"runs.list"')).length;
    await watcher.waitForTimeout(5000);
    expect(sent.filter((f) => f.includes('"runs.list"')).length).toBe(listed);
    await watcher.close();
  }, 150_000);
});

async function browserPageAt(url: string): Promise<Page> {
  const page = await fx.browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(url);
  return page;
}
