// Issue 25: a job outlives its page. A run started in one tab survives a reload of that tab (re-attached,
// its curve redrawn, Cancel there), shows live in a second tab, and is cancelled from the status bar of either.
import path from 'node:path';

import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';

const fx = serveInChromium({ timeoutMs: 120_000 });

const stepOf = async (page: Page) => Number(/step ([\d,]+) \//.exec(await page.getByTestId('live-step').innerText())?.[1].replace(/,/g, '') ?? -1);
const pointsOf = async (page: Page) => Number(await page.getByTestId('live-loss-chart').getAttribute('data-points'));

describe('a job outlives its page', () => {
  it('re-attaches a training run after a reload and in a second tab, and either cancels it', async () => {
    const errors: string[] = [];
    const first = await fx.browser.newPage({ viewport: { width: 1280, height: 1100 } });
    first.on('pageerror', (e) => errors.push(e.message));
    await first.goto(`${fx.serve.url}#/runs`);
    await first.getByTestId('new-run').waitFor();
    await first.getByTestId('newrun-model').selectOption('mlp');
    await first.getByTestId('newrun-data').selectOption('fashion-mnist');
    await first.getByTestId('newrun-epochs').fill('20'); // far more than the test waits for: it is cancelled
    await first.getByTestId('newrun-start').click();
    await expect.poll(() => stepOf(first), { timeout: 60_000 }).toBeGreaterThan(0);

    await first.reload();
    await first.getByTestId('live-run').waitFor({ timeout: 10_000 });
    // The curve so far, from the job's recorded steps: replayed once the page has mounted its views
    // (a tick after live-run shows), so read it as it comes, not at the first frame.
    await expect.poll(() => pointsOf(first), { timeout: 3_000 }).toBeGreaterThan(0);
    const after = await stepOf(first);
    await expect.poll(() => stepOf(first), { timeout: 20_000 }).toBeGreaterThan(after);
    expect(await first.getByTestId('live-cancel').isEnabled()).toBe(true);
    expect(await first.getByTestId('jobs-indicator').innerText()).toBe('1 job running');

    const second = await fx.browser.newPage({ viewport: { width: 1280, height: 1100 } });
    second.on('pageerror', (e) => errors.push(e.message));
    await second.goto(`${fx.serve.url}#/runs`);
    await second.getByTestId('live-run').waitFor({ timeout: 10_000 });
    await expect.poll(() => stepOf(second), { timeout: 20_000 }).toBeGreaterThan(0);
    await second.getByTestId('jobs-toggle').click();
    const row = second.locator('[data-testid^="job-2"]');
    expect(await row.innerText()).toMatch(/^training run · engine\s+\d{8}-\d{6}-[0-9a-f]{6} · \d+/);
    await second.screenshot({ path: path.join(SHOTS, 'jobs-reattached.png'), fullPage: true });
    await row.getByRole('button', { name: 'Cancel' }).click();

    for (const page of [first, second]) {
      await page.getByTestId('live-run').waitFor({ state: 'detached', timeout: 30_000 });
      expect(await page.getByTestId('newrun-result').innerText()).toMatch(/cancelled/);
      await expect.poll(() => page.getByTestId('jobs-indicator').innerText()).toBe('no jobs running');
      // The list is read again when the job ends: the page may still show the one it read on load.
      const rows = page.locator('[data-testid^="run-2"]');
      await expect.poll(() => rows.count()).toBe(1);
      await expect.poll(() => rows.first().innerText()).toMatch(/cancelled/);
    }
    expect(errors).toEqual([]);
    await first.close();
    await second.close();
  }, 150_000);
});
