// Issue 41 item 8 (a, b): the Batch size area's answer stays when a person goes to another area and back, and
// after a reload it is read again from its run (the area's URL names it); a script's answer has Apply too,
// which puts the command and the batch found, as its dataloader.batch_size override, into New run's and
// Optimise's Script target.
import { mkdirSync } from 'node:fs';
import path from 'node:path';

import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

import { serveInChromium } from '../helpers/e2e';
import { PYTHON, SCRIPTS } from '../script/script-helpers';

const SHOTS = '/tmp/renderer-shots';
mkdirSync(SHOTS, { recursive: true });
const fx = serveInChromium({ timeoutMs: 120_000, serveArgs: ['--allow-scripts'] });
const OOM_GUARD = path.join(SCRIPTS, 'oom_guard.py');

/** The override rows of the Script target's fields shown, as key=value. */
const overridesOf = (page: Page) =>
  page.locator('[data-test="script-fields"]').evaluate((el) => {
    const keys = Array.from(el.querySelectorAll('select[data-test="script-override-key"]')) as HTMLSelectElement[];
    const values = Array.from(el.querySelectorAll('input[data-test="script-override-value"]')) as HTMLInputElement[];
    return keys.map((k, i) => `${k.value}=${values[i].value}`);
  });

describe('Batch size: the answer stays, and a script answer applies', () => {
  it("the engine's answer is there after another area and back, and after a reload", async () => {
    const errors: string[] = [];
    const page = await fx.browser.newPage({ viewport: { width: 1440, height: 1100 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/batch-size`);
    await page.getByTestId('bs-model').selectOption('mlp');
    await page.getByTestId('bs-memory-limit').fill('64');
    await page.getByTestId('bs-steps').fill('3');
    await page.getByTestId('bs-start').click();
    const verdict = page.getByTestId('bs-verdict');
    await verdict.waitFor({ timeout: 120_000 });
    const said = await verdict.innerText();
    const rows = await page.getByTestId('bs-trials').locator('tbody tr').count();
    const what = await page.getByTestId('bs-apply-what').innerText();
    // On the CPU the trials carry the process's peak, above the limit's line: the page says what the limit caps.
    expect(await page.getByTestId('bs-limit-note').innerText()).toMatch(/^The memory limit caps the training's own memory/);
    // The answer's run names it in the URL.
    await expect.poll(() => page.url()).toMatch(/#\/batch-size\?run=\d{8}-\d{6}-[0-9a-f]{6}$/);
    const url = page.url();

    await page.getByTestId('nav-runs').click();
    await page.getByTestId('area-runs').waitFor();
    await page.getByTestId('nav-batch-size').click();
    await page.getByTestId('area-batch-size').waitFor();
    expect(await verdict.innerText()).toBe(said);
    expect(await page.getByTestId('bs-trials').locator('tbody tr').count()).toBe(rows);
    expect(page.url()).toBe(url);

    await page.reload();
    await verdict.waitFor({ timeout: 15_000 });
    expect(await verdict.innerText()).toBe(said);
    expect(await page.getByTestId('bs-trials').locator('tbody tr').count()).toBe(rows);
    // Apply works from the answer read again, and the form shows what was searched.
    await expect.poll(() => page.getByTestId('bs-apply-what').innerText()).toBe(what);
    expect(await page.getByTestId('bs-model').inputValue()).toBe('mlp');
    expect(await page.getByTestId('bs-memory-limit').inputValue()).toBe('64');
    expect(await page.getByTestId('bs-steps').inputValue()).toBe('3');
    await page.screenshot({ path: path.join(SHOTS, 'batch-size-reloaded-1440.png'), fullPage: true });
    await page.setViewportSize({ width: 1024, height: 1100 });
    await page.screenshot({ path: path.join(SHOTS, 'batch-size-reloaded-1024.png'), fullPage: true });

    // A page opened afresh on the area, without the answer in its URL (a new tab, a typed address): the search is
    // listed under Past searches, and Show puts it back, URL and all.
    const fresh = await fx.browser.newPage({ viewport: { width: 1440, height: 1100 } });
    fresh.on('pageerror', (e) => errors.push(e.message));
    await fresh.goto(`${fx.serve.url}#/batch-size`);
    const runId = /run=([\w-]+)$/.exec(url)![1];
    const open = fresh.getByTestId(`bs-past-open-${runId}`);
    await open.waitFor({ timeout: 15_000 });
    expect(await fresh.getByTestId(`bs-past-${runId}`).innerText()).toMatch(/batch-size search: mlp on .*completed/s);
    await open.click();
    await fresh.getByTestId('bs-verdict').waitFor({ timeout: 15_000 });
    expect(await fresh.getByTestId('bs-verdict').innerText()).toBe(said);
    await expect.poll(() => fresh.url()).toBe(url);
    expect(await fresh.getByTestId(`bs-past-${runId}`).innerText()).toContain('shown above');
    await fresh.screenshot({ path: path.join(SHOTS, 'batch-size-past-1440.png'), fullPage: true });
    await fresh.close();
    expect(errors).toEqual([]);
    await page.close();
  }, 200_000);

  it("a script's answer applies to New run's and Optimise's Script target as the dataloader.batch_size override", async () => {
    const errors: string[] = [];
    const page = await fx.browser.newPage({ viewport: { width: 1440, height: 1300 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/batch-size`);
    await page.getByTestId('target-script').check();
    await page.locator('[data-test="script-command"]').fill(`${PYTHON} ${OOM_GUARD}`);
    await page.locator('[data-test="script-cwd"]').fill(SCRIPTS);
    await page.locator('[data-test="script-env-add"]').click();
    await page.locator('[data-test="script-env-name"]').fill('OOM_AT');
    await page.locator('[data-test="script-env-value"]').fill('20');
    await page.locator('[data-test="sbs-start-batch"]').fill('16');
    await page.locator('[data-test="sbs-warmup"]').fill('1');
    await page.locator('[data-test="sbs-steps"]').fill('3');
    await page.getByTestId('sbs-start').click();
    await page.locator('[data-test="confirm-run"]').click();
    const verdict = page.getByTestId('sbs-verdict');
    await verdict.waitFor({ timeout: 180_000 });
    const recommended = /recommended ([\d,]+)/.exec(await page.getByTestId('sbs-summary').innerText())![1].replace(/,/g, '');
    expect(Number(recommended)).toBeGreaterThanOrEqual(16);
    expect(await page.getByTestId('sbs-apply-what').innerText()).toBe(`the override dataloader.batch_size=${recommended} with this command, for the Script target`);
    await page.screenshot({ path: path.join(SHOTS, 'script-batch-apply-1440.png'), fullPage: true });

    await page.getByTestId('sbs-apply-newrun').click();
    await page.getByTestId('area-runs').waitFor();
    expect(await page.getByTestId('newrun-target-script').isChecked()).toBe(true);
    expect(await page.locator('[data-test="script-command"]').inputValue()).toBe(`${PYTHON} ${OOM_GUARD}`);
    expect(await page.locator('[data-test="script-cwd"]').inputValue()).toBe(SCRIPTS);
    expect(await page.locator('[data-test="script-env-value"]').inputValue()).toBe('20');
    expect(await overridesOf(page)).toEqual([`dataloader.batch_size=${recommended}`]);
    expect(await page.getByTestId('newrun-script-applied').innerText()).toMatch(/^Settings from batch-size search \S+: check them, then start the run\.$/);
    await page.getByTestId('new-run').screenshot({ path: path.join(SHOTS, 'script-batch-apply-newrun-1440.png') });

    // Back to the answer (kept), then into Optimise's Script target.
    await page.getByTestId('nav-batch-size').click();
    await page.getByTestId('sbs-apply-optimise').click();
    await page.getByTestId('area-optimise').waitFor();
    expect(await page.getByTestId('opt-target-script').isChecked()).toBe(true);
    expect(await page.locator('[data-test="script-command"]').inputValue()).toBe(`${PYTHON} ${OOM_GUARD}`);
    expect(await overridesOf(page)).toEqual([`dataloader.batch_size=${recommended}`]);
    expect(await page.getByTestId('opt-script-applied').innerText()).toMatch(/^Settings from batch-size search \S+: check them, then press Optimise\.$/);
    await page.setViewportSize({ width: 1024, height: 1300 });
    await page.screenshot({ path: path.join(SHOTS, 'script-batch-apply-optimise-1024.png') });
    expect(errors).toEqual([]);
    await page.close();
  }, 240_000);
});
