// Issue 41 item 8 (c): the run open in the Runs area has its own URL, #/runs?run=<id>: a click puts it there,
// a reload or a pasted link opens that run, and back and forward step through the runs opened.
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

import { serveInChromium } from '../helpers/e2e';
import { CLI } from '../helpers/repo';

const SHOTS = '/tmp/renderer-shots';
mkdirSync(SHOTS, { recursive: true });
const fx = serveInChromium({
  timeoutMs: 120_000,
  async prepare(workspace) {
    const train = () => promisify(execFile)(process.execPath, [CLI, 'train', '--model', 'mlp', '--max-steps', '5', '--json', '--workspace', workspace]);
    await train();
    await train();
  },
});

/** The page's route (serve mode's token is not part of it). */
const hashOf = (page: Page) => new URL(page.url()).hash;
const selectedRow = (page: Page) => page.locator('tr[aria-selected="true"]').getAttribute('data-testid');

describe('a run has its own URL', () => {
  it('a click, a reload, a pasted link, back and forward', async () => {
    const [older, newer] = readdirSync(path.join(fx.workspace, 'runs')).sort();
    const errors: string[] = [];
    const page = await fx.browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId(`run-${older}`).click();
    await page.getByTestId('run-detail').waitFor();
    await expect.poll(() => hashOf(page)).toBe(`#/runs?run=${older}`);
    expect(await selectedRow(page)).toBe(`run-${older}`);

    await page.getByTestId(`run-${newer}`).click();
    await expect.poll(() => hashOf(page)).toBe(`#/runs?run=${newer}`);
    await expect.poll(() => selectedRow(page)).toBe(`run-${newer}`);

    await page.reload();
    await page.getByTestId('run-detail').waitFor();
    await expect.poll(() => selectedRow(page)).toBe(`run-${newer}`);

    await page.goBack();
    await expect.poll(() => hashOf(page)).toBe(`#/runs?run=${older}`);
    await expect.poll(() => selectedRow(page)).toBe(`run-${older}`);
    await page.goForward();
    await expect.poll(() => selectedRow(page)).toBe(`run-${newer}`);
    await page.goBack();
    await page.goBack();
    // Back to the area without a run: none is open.
    await expect.poll(() => hashOf(page)).toBe('#/runs');
    await expect.poll(() => page.getByTestId('run-detail').count()).toBe(0);

    // Another area and back: the run opened stays open, and the URL names it again.
    await page.getByTestId(`run-${older}`).click();
    await page.getByTestId('nav-datasets').click();
    await page.getByTestId('nav-runs').click();
    await expect.poll(() => hashOf(page)).toBe(`#/runs?run=${older}`);
    await expect.poll(() => selectedRow(page)).toBe(`run-${older}`);

    // A pasted link, in a window of its own, at a narrower width.
    const pasted = await fx.browser.newPage({ viewport: { width: 1024, height: 1000 } });
    pasted.on('pageerror', (e) => errors.push(e.message));
    await pasted.goto(`${fx.serve.url}#/runs?run=${older}`);
    await pasted.getByTestId('run-detail').waitFor();
    await expect.poll(() => selectedRow(pasted)).toBe(`run-${older}`);
    await pasted.waitForTimeout(500);
    await pasted.screenshot({ path: path.join(SHOTS, 'runs-url-pasted-1024.png') });
    await page.screenshot({ path: path.join(SHOTS, 'runs-url-1440.png') });
    expect(errors).toEqual([]);
    await pasted.close();
    await page.close();
  }, 120_000);
});
