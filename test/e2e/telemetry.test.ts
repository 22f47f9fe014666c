// The Dashboard's live telemetry in Chromium, fed by a fake nvidia-smi replaying a recorded format.
import path from 'node:path';

import type { Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { fakeNvidiaSmi } from '../helpers/fake-nvidia-smi';

const fake = fakeNvidiaSmi('multi-gpu.txt');
afterAll(() => fake.cleanup());
const fx = serveInChromium({ env: { TRAINBENCH_NVIDIA_SMI: fake.command } });

const points = async (page: Page, chart: string) => Number((await page.getByTestId(chart).getAttribute('data-points')) ?? 0);

describe('live telemetry on the Dashboard', () => {
  it('charts GPU and host telemetry, and pause holds the charts still', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1400 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(fx.serve.url);
    await page.getByTestId('gpu-card-3').waitFor({ timeout: 15_000 });
    expect(await page.getByTestId('gpu-card-0').innerText()).toContain('NVIDIA GeForce RTX 4090');
    for (const chart of ['chart-util', 'chart-mem', 'chart-temp', 'chart-power', 'chart-sm', 'chart-cpu', 'chart-ram', 'chart-disk']) {
      await expect.poll(() => points(page, chart), { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    }
    expect(await page.getByTestId('gpu-card-2').innerText()).toMatch(/clocks held down: .*thermal/);
    await page.getByTestId('window-60').click();
    await page.screenshot({ path: path.join(SHOTS, 'dashboard-telemetry.png'), fullPage: true });

    await page.getByTestId('pause').click();
    const frozen = await points(page, 'chart-util');
    await page.waitForTimeout(1500);
    expect(await points(page, 'chart-util')).toBe(frozen);
    await page.getByTestId('pause').click();
    await expect.poll(() => points(page, 'chart-util'), { timeout: 5000 }).toBeGreaterThan(frozen);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
