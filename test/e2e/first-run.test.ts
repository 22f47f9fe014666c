// The first-run path (issue 27 item 8) in Chromium: an empty workspace's Dashboard offers three first steps, each
// landing in its area with its target chosen and nothing started; once a run exists the card is gone.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { CLI } from '../helpers/repo';

const fx = serveInChromium();

/** The Dashboard, once it has read the runs list: 'empty' or 'used'. */
async function dashboard(page: Page): Promise<string | null> {
  await page.getByTestId('nav-dashboard').click();
  const area = page.getByTestId('area-dashboard');
  await expect.poll(() => area.getAttribute('data-workspace')).not.toBe('unread');
  return area.getAttribute('data-workspace');
}

const focusedTestId = (page: Page) => page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? document.activeElement?.getAttribute('data-test') ?? null);

describe('first-run path', () => {
  it('offers the example, a script and an import on an empty workspace, each landing ready to start', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(fx.serve.url);
    expect(await dashboard(page)).toBe('empty');
    const card = page.getByTestId('first-run');
    await card.waitFor();
    // Above the devices and the charts: the first thing read.
    expect((await card.boundingBox())!.y).toBeLessThan((await page.getByTestId('device-list').boundingBox())!.y);
    await page.screenshot({ path: path.join(SHOTS, 'first-run-dashboard.png') });

    // 1. The built-in example, as `npm start` optimises it; the person presses Optimise.
    await page.getByTestId('first-run-example').click();
    await page.getByTestId('area-optimise').waitFor();
    expect(await page.getByTestId('opt-target-engine').isChecked()).toBe(true);
    await expect.poll(() => page.getByTestId('opt-model').inputValue()).toBe('bottleneck_resnet');
    expect(await page.getByTestId('opt-data').inputValue()).toBe('example-board');
    expect(await page.getByTestId('opt-device').inputValue()).toMatch(/^(cpu|cuda:\d+)$/);
    expect(await page.getByTestId('opt-warmupSteps').inputValue()).toBe('2');
    expect(await page.getByTestId('opt-steps').inputValue()).toBe('8');
    expect(await page.getByTestId('opt-maxTrials').inputValue()).toBe('3');
    expect(await page.getByTestId('opt-minWindowSeconds').inputValue()).toBe('1');
    expect(await page.getByTestId('opt-batchSize').inputValue()).toBe('256');
    await expect.poll(() => focusedTestId(page)).toBe('opt-start');
    // Nothing started, and the query is gone (a reload keeps the person's edits).
    expect(await page.getByTestId('opt-shown').count()).toBe(0);
    expect(await page.getByTestId('opt-cancel').isDisabled()).toBe(true);
    expect(page.url()).toMatch(/#\/optimise$/);
    await page.screenshot({ path: path.join(SHOTS, 'first-run-example.png') });

    // 2. The user's own script: the Script target, the command to type focused.
    expect(await dashboard(page)).toBe('empty');
    await page.getByTestId('first-run-script').click();
    await page.getByTestId('opt-script-form').waitFor();
    expect(await page.getByTestId('opt-target-script').isChecked()).toBe(true);
    await expect.poll(() => focusedTestId(page)).toBe('script-command');
    expect(page.url()).toMatch(/#\/optimise$/);
    await page.screenshot({ path: path.join(SHOTS, 'first-run-script.png') });

    // 3. Import data: the Datasets area's wizard at its first step, its Kind focused.
    expect(await dashboard(page)).toBe('empty');
    await page.getByTestId('first-run-import').click();
    await page.getByTestId('area-datasets').waitFor();
    await page.getByTestId('import-wizard').waitFor();
    await expect.poll(() => focusedTestId(page)).toBe('source-kind');
    expect(await page.getByTestId('import-wizard').isVisible()).toBe(true);
    expect(page.url()).toMatch(/#\/datasets$/);
    // The built-in datasets New run offers are named here, not denied ("No dataset is cached yet" alone).
    expect(await page.getByTestId('datasets-none').innerText()).toMatch(/^No dataset is cached yet: import one below\. The built-in ones, Fashion-MNIST and the example board positions, are cached by the first run/);
    await page.screenshot({ path: path.join(SHOTS, 'first-run-import.png') });

    // At 1024x700 the three choices still fit beside the collapsed sidebar, without sideways scrolling.
    await page.setViewportSize({ width: 1024, height: 700 });
    expect(await dashboard(page)).toBe('empty');
    await card.waitFor();
    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth - document.scrollingElement!.clientWidth)).toBe(0);
    await page.screenshot({ path: path.join(SHOTS, 'first-run-dashboard-1024.png') });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('is gone once a run exists', async () => {
    await promisify(execFile)(process.execPath, [CLI, 'train', '--model', 'mlp', '--max-steps', '20', '--json', '--workspace', fx.workspace]);
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(fx.serve.url);
    expect(await dashboard(page)).toBe('used');
    expect(await page.getByTestId('first-run').count()).toBe(0);
    await page.close();
  }, 60_000);
});
