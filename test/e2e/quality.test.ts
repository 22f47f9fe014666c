// Renderer quality in Chromium: the nav marks unbuilt areas, Remove asks first, and charts are labelled
// (the engine heartbeat's in the About panel: dashboard-history.test.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { areas } from '../../src-renderer/areas';
import { serveInChromium, SHOTS } from '../helpers/e2e';
import { fakeNvidiaSmi } from '../helpers/fake-nvidia-smi';

const fake = fakeNvidiaSmi('multi-gpu.txt');
afterAll(() => fake.cleanup());
const fx = serveInChromium({
  env: { TRAINBENCH_NVIDIA_SMI: fake.command },
  prepare(workspace) {
    mkdirSync(path.join(workspace, 'sources'), { recursive: true });
    writeFileSync(path.join(workspace, 'sources', 'iris.csv'), ['sepal_length,species', '5.1,setosa', '7.0,versicolor', '6.3,virginica'].join('\n') + '\n');
  },
});

describe('renderer quality (serve mode, Chromium)', () => {
  it('marks the areas that are not built yet in the nav, and only those', async () => {
    const page = await fx.browser.newPage();
    await page.goto(fx.serve.url);
    await page.getByTestId('nav-dashboard').waitFor();
    for (const area of areas) {
      const link = page.getByTestId(`nav-${area.name}`);
      const unbuilt = Boolean(area.arrivesWith);
      expect(await link.getAttribute('data-unbuilt'), area.name).toBe(unbuilt ? 'true' : null);
      expect(await page.getByTestId(`nav-${area.name}-soon`).count(), area.name).toBe(unbuilt ? 1 : 0);
      if (unbuilt) expect(await link.getAttribute('title')).toContain(area.arrivesWith);
    }
    expect(areas.filter((a) => a.arrivesWith).map((a) => a.name)).toEqual([]);
    await page.screenshot({ path: path.join(SHOTS, 'quality-nav.png'), clip: { x: 0, y: 0, width: 220, height: 320 } });
    await page.close();
  });

  it('gives every chart an accessible label', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1600 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(fx.serve.url);
    await page.getByTestId('chart-util').waitFor({ timeout: 15_000 });
    await expect.poll(async () => Number(await page.getByTestId('chart-util').getAttribute('data-points')), { timeout: 15_000 }).toBeGreaterThanOrEqual(3);

    const util = await page.getByTestId('chart-util').getAttribute('aria-label');
    expect(util).toMatch(/^GPU utilization chart, last 5 min; latest: GPU 0 \d+(\.\d+)? %, GPU 1 /);
    expect(await page.getByTestId('chart-util').getAttribute('role')).toBe('img');
    await page.screenshot({ path: path.join(SHOTS, 'quality-dashboard.png'), fullPage: true });

    // The tooltip (ECharts draws it as HTML) is dark, with units and rounded values.
    const box = (await page.getByTestId('chart-mem').boundingBox())!;
    await page.mouse.move(box.x + box.width - 30, box.y + box.height / 2);
    // ECharts' tooltip root is the absolutely placed div on top of everything.
    const tip = page.getByTestId('chart-mem').locator('div[style*="z-index: 9999999"]');
    await expect.poll(() => tip.isVisible(), { timeout: 5000 }).toBe(true);
    const text = await tip.innerText();
    expect(text).toMatch(/GPU 0 used\s+\d+(\.\d)? GiB/);
    expect(text).toMatch(/GPU 0 total\s+24 GiB/);
    // At most three significant digits: 21.6 GiB, and 3 MiB as 0.003 GiB.
    expect(text).toMatch(/GPU 3 used\s+0\.003 GiB/);
    expect(text).not.toMatch(/\d\.\d{4,}/);
    expect(await tip.evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(21, 28, 35)');
    await page.screenshot({ path: path.join(SHOTS, 'quality-tooltip.png'), clip: { x: box.x, y: box.y - 10, width: box.width, height: box.height + 120 } });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('asks before removing a dataset, and Keep leaves it in place', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(fx.serve.url);
    await page.getByTestId('nav-datasets').click();
    await page.getByTestId('file-iris.csv').click();
    await expect.poll(() => page.getByTestId('csv-label').inputValue()).toBe('species');
    await page.getByTestId('inspect').click();
    await page.getByTestId('field-table').waitFor();
    await page.getByTestId('build').click();
    const row = page.getByTestId('dataset-iris');
    await row.waitFor({ timeout: 30_000 });

    await row.getByTestId('remove').click();
    expect(await row.innerText()).toContain('Delete the cache of iris?');
    await page.screenshot({ path: path.join(SHOTS, 'quality-remove-confirm.png') });
    await row.getByTestId('remove-cancel').click();
    // Kept: still listed after a fresh read of the workspace.
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.waitForTimeout(300);
    expect(await page.getByTestId('dataset-iris').count()).toBe(1);
    expect(await row.getByTestId('remove').isVisible()).toBe(true);

    await row.getByTestId('remove').click();
    await row.getByTestId('remove-confirm').click();
    await expect.poll(() => page.getByTestId('dataset-iris').count(), { timeout: 10_000 }).toBe(0);
    await page.close();
  }, 60_000);
  it('labels the batch-size chart with each fitting batch, its throughput and memory, rounded with units', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1100 } });
    await page.goto(fx.serve.url);
    await page.getByTestId('nav-batch-size').click();
    await page.getByTestId('bs-model').selectOption('cnn');
    await page.getByTestId('bs-memory-limit').fill('128');
    await page.getByTestId('bs-steps').fill('3');
    await page.getByTestId('bs-start').click();
    await page.getByTestId('bs-verdict').waitFor({ timeout: 90_000 });
    // Three significant figures: a slow machine's 62.3 samples/s keeps its decimal.
    const chart = page.getByTestId('batch-size-chart');
    expect(await chart.getAttribute('role')).toBe('img');
    // A CPU search: the memory is the engine process's peak as the OS counted it (issue 38).
    expect(await chart.getAttribute('aria-label')).toMatch(
      /^Throughput and memory by batch size chart: batch \d+: [\d,.]+ samples\/s, process peak [\d,.]+ MiB(; batch \d+: [\d,.]+ samples\/s, process peak [\d,.]+ MiB)*(; out of memory at batch [\d, ]+)?(; killed at batch [\d, ]+)?$/,
    );
    await page.close();
  }, 200_000);
});
