// Issue 11, section 2: the Benchmarks area in Chromium starts a training benchmark, shows its
// progress, compares it with an earlier one as stacked phase bars with CI error bars, and cancels.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { CLI } from '../helpers/repo';

const fx = serveInChromium({
  timeoutMs: 180_000,
  async prepare(workspace) {
    // An earlier benchmark (batch 32) to compare with; it also caches Fashion-MNIST in the workspace.
    await promisify(execFile)(process.execPath, [CLI, 'benchmark-training', '--batch-size', '32', '--steps', '20', '--warmup-steps', '2', '--repeat', '3', '--json', '--workspace', workspace]);
  },
});

describe('Benchmarks area', () => {
  it('starts a benchmark, shows its progress, and charts it beside the earlier one', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1200 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(fx.serve.url);
    await page.getByTestId('nav-benchmarks').click();
    await page.getByTestId('benchmark-table').waitFor();
    expect(await page.locator('[data-testid^="benchmark-2"]').count()).toBe(1);

    await page.getByTestId('benchmark-batchSize').fill('128');
    await page.getByTestId('benchmark-warmupSteps').fill('3');
    await page.getByTestId('benchmark-steps').fill('150');
    await page.getByTestId('benchmark-repeat').fill('3');
    await page.getByTestId('benchmark-start').click();
    const progress = page.getByTestId('benchmark-progress');
    await expect.poll(() => progress.innerText(), { timeout: 60_000 }).toMatch(/repetition [1-3] of 3(: step \d+ of 153| done)/);

    await expect.poll(() => page.locator('[data-testid^="benchmark-2"]').count(), { timeout: 120_000 }).toBe(2);
    expect(await progress.count()).toBe(0);
    const rows = page.locator('[data-testid^="benchmark-2"]');
    expect(await rows.nth(1).innerText()).toMatch(/mlp on fashion-mnist-train \(60000 records\)[\s\S]*adamw · batch 128×1 · 3\+150 steps × 3/);
    expect(await rows.nth(1).innerText()).toMatch(/[\d,]+ \[[\d,]+, [\d,]+\]/);
    await page.getByTestId('benchmark-phase-chart').locator('canvas').first().waitFor();
    await page.getByTestId('benchmark-throughput-chart').locator('canvas').first().waitFor();
    expect(await page.getByTestId('benchmark-findings').innerText()).toMatch(/Findings for #2/);
    // An older row's findings are a click away.
    await page.getByTestId('benchmark-show-findings-1').click();
    expect(await page.getByTestId('benchmark-findings').innerText()).toMatch(/Findings for #1/);
    // Issue 26: the model's arithmetic against the peak measured on this CPU, and why a CPU has no GPU energy.
    expect(await page.getByTestId('benchmark-utilisation').innerText()).toMatch(/^Utilisation: [\d.]+ GFLOP\/s of model arithmetic: \d+\.\d% of the \d+ GFLOP\/s measured on this device/);
    expect(await page.getByTestId('benchmark-energy').innerText()).toMatch(/^Energy: not measured: /);
    await page.waitForTimeout(300); // let ECharts paint before the screenshot
    await page.screenshot({ path: path.join(SHOTS, 'benchmarks.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 240_000);

  it('cancels a running benchmark and says so', async () => {
    const page = await fx.browser.newPage();
    await page.goto(`${fx.serve.url}#/benchmarks`);
    await page.getByTestId('benchmark-table').waitFor();
    await page.getByTestId('benchmark-steps').fill('1000000');
    await page.getByTestId('benchmark-start').click();
    await expect.poll(() => page.getByTestId('benchmark-progress').innerText(), { timeout: 60_000 }).toMatch(/measuring/);
    await page.getByTestId('benchmark-cancel').click();
    await expect.poll(() => page.getByTestId('benchmark-error').innerText(), { timeout: 30_000 }).toMatch(/^the benchmark was cancelled in repetition \d+ of \d+, at step [\d,]+ of its [\d,]+$/); // in a benchmark's words, not training's
    expect(await page.getByTestId('benchmark-error').getAttribute('class')).toBe('notice');
    expect(await page.getByTestId('benchmark-start').isEnabled()).toBe(true);
    // The cancelled run is kept, as cancelled, and not compared.
    expect(await page.locator('[data-testid^="benchmark-2"]').count()).toBe(2);
    await page.getByTestId('nav-runs').click();
    await page.getByTestId('runs-table').waitFor();
    const kinds = await page.locator('[data-testid^="run-2"]').allInnerTexts();
    expect(kinds.filter((t) => /benchmark/.test(t) && /cancelled/.test(t))).toHaveLength(1);
    await page.close();
  }, 120_000);
});
