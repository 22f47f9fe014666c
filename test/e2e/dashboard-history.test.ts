// Issue 27 item 7 in Chromium through serve: the workbench keeps sampling while no window shows the
// Dashboard, so a window coming back (or a new one) charts the time it was away; the engine's plumbing
// (round trip, N-API version) lives in the About panel, not on the Dashboard.
import path from 'node:path';

import type { Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { fakeNvidiaSmi } from '../helpers/fake-nvidia-smi';

const fake = fakeNvidiaSmi('multi-gpu.txt');
afterAll(() => fake.cleanup());
const fx = serveInChromium({ env: { TRAINBENCH_NVIDIA_SMI: fake.command } });

const attr = async (page: Page, id: string, name: string) => Number((await page.getByTestId(id).getAttribute(name)) ?? NaN);
const AWAY_MS = 20_000;

async function openDashboard(errors: string[]): Promise<Page> {
  const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1100 } });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(fx.serve.url);
  return page;
}

describe('Dashboard history and the About panel (serve mode, Chromium)', () => {
  it('charts the time spent in another area, sampled in the background, and says so', async () => {
    const errors: string[] = [];
    const page = await openDashboard(errors);
    await expect.poll(() => attr(page, 'chart-util', 'data-points'), { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    const before = await attr(page, 'chart-util', 'data-points');

    // Away in Runs: no window shows the Dashboard, the 2 s background lease keeps sampling.
    await page.getByTestId('nav-runs').click();
    await page.getByTestId('area-runs').waitFor();
    await page.waitForTimeout(AWAY_MS);
    await page.getByTestId('nav-dashboard').click();
    await expect.poll(() => attr(page, 'chart-util', 'data-points'), { timeout: 10_000 }).toBeGreaterThanOrEqual(before + AWAY_MS / 2000 - 2);
    // No break in the line: the time away is covered.
    for (const chart of ['chart-util', 'chart-mem', 'chart-cpu']) expect(await attr(page, chart, 'data-gaps'), chart).toBe(0);
    const line = page.getByTestId('history-sampling');
    await expect.poll(() => line.getAttribute('data-periods')).toMatch(/^(2000,500|500,2000)$/);
    expect(await line.innerText()).toMatch(/every 2 s \(in the background, while no window showed the Dashboard\) for \d+ s/);
    await page.getByTestId('window-900').click();
    await page.screenshot({ path: path.join(SHOTS, 'dashboard-history.png'), fullPage: true });

    // Any window: a new one opening the Dashboard gets the ring's history at once, the time away included.
    const other = await openDashboard(errors);
    await expect.poll(() => attr(other, 'chart-util', 'data-points'), { timeout: 15_000 }).toBeGreaterThanOrEqual(before + AWAY_MS / 2000 - 2);
    expect(await attr(other, 'chart-util', 'data-gaps')).toBe(0);
    await other.close();
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('shows the round trip, N-API version, build and workspace in About, and the Dashboard does not', async () => {
    const errors: string[] = [];
    const page = await openDashboard(errors);
    await page.getByTestId('chart-util').waitFor({ timeout: 15_000 });
    const dashboard = await page.getByTestId('area-dashboard').innerText();
    expect(dashboard).not.toMatch(/N-API|round trip/i);
    expect(await page.getByTestId('ping-chart').count()).toBe(0);

    await page.getByTestId('open-about').click();
    const about = page.getByTestId('about');
    await about.waitFor();
    await expect.poll(() => page.getByTestId('ping-last').innerText(), { timeout: 10_000 }).toMatch(/^\d+\.\d+ ms$/);
    expect(await page.getByTestId('about-engine').innerText()).toMatch(/^v\S+, N-API \d+$/);
    expect(await page.getByTestId('about-version').innerText()).toMatch(/^v\d+\.\d+\.\d+/);
    expect(await page.getByTestId('about-workspace').innerText()).toBe(fx.workspace);
    expect(await page.getByTestId('engine-host-state').innerText()).toMatch(/^ready · pid \d+ · 0 restarts$/);
    await expect.poll(() => attr(page, 'ping-chart', 'data-samples'), { timeout: 10_000 }).toBeGreaterThanOrEqual(4);
    expect(await page.getByRole('img', { name: /^Engine round trip chart, \d+ pings; latest \d+(\.\d+)? ms$/ }).count()).toBe(1);
    await page.screenshot({ path: path.join(SHOTS, 'about.png') });
    // At 1024x700 the panel fits the window, the workspace path wrapped, nothing cut off.
    await page.setViewportSize({ width: 1024, height: 700 });
    const box = (await about.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.y + box.height).toBeLessThanOrEqual(700);
    expect(await about.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
    await page.screenshot({ path: path.join(SHOTS, 'about-1024.png') });

    // Escape closes it, and the heartbeat stops with it.
    await page.keyboard.press('Escape');
    await expect.poll(() => about.isVisible()).toBe(false);
    await expect.poll(() => page.getByTestId('ping-chart').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
