// Issue 14 (Runs area): a Script target in the New run form, in Chromium through
// `trainbench serve --allow-scripts`: the tutorial fixture trains live (samples/s, loss,
// output), Cancel stops it, a finished run's page shows its curves, telemetry and output;
// a serve without --allow-scripts says how to allow scripts.
import path from 'node:path';

import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { PYTHON, SCRIPTS } from '../script/script-helpers';

const TUTORIAL = path.join(SCRIPTS, 'fashion_mnist_tutorial.py');
const allowed = serveInChromium({ serveArgs: ['--allow-scripts'] });
const refused = serveInChromium();

async function startScript(page: Page, url: string, commandLine: string): Promise<void> {
  await page.goto(`${url}#/runs`);
  await page.getByTestId('newrun-target-script').check();
  await page.locator('[data-test="script-command"]').fill(commandLine);
  await page.locator('[data-test="script-cwd"]').fill(SCRIPTS);
  await page.getByTestId('newrun-script-start').click();
  expect(await page.locator('[data-test="confirm-command"]').innerText()).toBe(commandLine);
  await page.locator('[data-test="confirm-run"]').click();
}
const stepOf = async (page: Page) => Number(/step ([\d,]+)/.exec(await page.getByTestId('live-script-step').innerText())?.[1].replace(/,/g, '') ?? -1);

describe('Script target in the Runs area', () => {
  it('trains live with samples/s, loss and output, and Cancel stops it, recorded cancelled', async () => {
    const page = await allowed.browser.newPage({ viewport: { width: 1280, height: 1400 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const command = `${PYTHON} ${TUTORIAL} --epochs 50 --limit 6400`;
    await startScript(page, allowed.serve.url, command);
    await expect.poll(() => stepOf(page), { timeout: 30_000 }).toBeGreaterThan(150);
    await expect.poll(async () => Number(await page.getByTestId('live-script-loss-chart').getAttribute('data-points')), { timeout: 10_000 }).toBeGreaterThan(2);
    expect(await page.getByTestId('live-script-rate').innerText()).toMatch(/^[\d,]+ samples\/s$/);
    expect(await page.getByTestId('live-script-loss').innerText()).toMatch(/^loss \d/);
    expect(await page.locator('[data-test="script-output"]').innerText()).toContain('num_workers=0 batch_size=64');
    // The status line above the output: no step limit, so it trains until the script ends on its own.
    expect(await page.locator('[data-test="script-status"]').innerText()).toMatch(/^training: step [\d,]+ \(until the script ends on its own\)$/);
    await page.screenshot({ path: path.join(SHOTS, 'script-run-live.png'), fullPage: true });
    await page.getByTestId('live-script-cancel').click();
    await page.getByTestId('newrun-script-result').waitFor({ timeout: 20_000 });
    expect(await page.getByTestId('newrun-script-result').innerText()).toContain('cancelled');
    expect(await page.getByTestId('newrun-script-result').getAttribute('class')).toBe('notice');
    const detail = page.getByTestId('run-detail');
    await detail.waitFor();
    // The list and the page name the run from its script file on (issue 27 item 10); the whole command is under the name.
    expect(await detail.locator('h2').innerText()).toBe('fashion_mnist_tutorial.py --epochs 50 --limit 6400');
    // Whole or with its paths shortened, depending on how long the checkout's path makes it.
    expect(await detail.getByTestId('run-full-title').innerText()).toMatch(/^script \S*python3 \S*fashion_mnist_tutorial\.py --epochs 50 --limit 6400$/);
    expect(await detail.innerText()).toContain('cancelled');
    await page.getByTestId('run-script-loss-chart').waitFor();
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it("a finished run's page shows its curves, its telemetry and the end of its output, listed under its command", async () => {
    const page = await allowed.browser.newPage({ viewport: { width: 1280, height: 1600 } });
    const command = `${PYTHON} ${TUTORIAL} --epochs 1 --limit 6400`;
    await startScript(page, allowed.serve.url, command);
    const detail = page.getByTestId('run-detail');
    await detail.getByTestId('run-script-result').waitFor({ timeout: 40_000 });
    expect(await detail.getByTestId('run-script-summary').innerText()).toMatch(/^100 optimizer steps · [\d,.]+ samples\/s .* last loss \d[\d.]* \(step 100\)/);
    await detail.getByTestId('run-script-rate-chart').waitFor();
    await detail.getByTestId('run-script-loss-chart').waitFor();
    // Each step's loss (UI round 4: a short run's chart held one mean point, and drew nothing).
    expect(await detail.getByTestId('run-script-loss-chart').getAttribute('aria-label')).toMatch(/^Training loss over 100 points, last [\d.]+ at step 100$/);
    await detail.getByTestId('run-telemetry').waitFor();
    expect(await detail.locator('[data-test="script-output"]').innerText()).toContain('Done! steps=100');
    const row = page.locator('[data-testid^="run-"][data-kind="train"]').filter({ hasText: /fashion_mnist_tutorial\.py --epochs 1 --limit 6400/ });
    expect(await row.count()).toBe(1);
    expect(await row.innerText()).toContain('completed');
    await detail.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'script-run-done.png'), fullPage: true });

    // Compare overlays the two script runs' loss curves (the cancelled one and this one) and names the command that differs.
    for (const id of await page.locator('[data-testid^="run-"][data-kind="train"]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-testid')!.slice(4)))) {
      await page.getByTestId(`pick-${id}`).check();
    }
    await page.getByTestId('compare-start').click();
    const loss = page.getByTestId('compare-loss-chart');
    await loss.waitFor();
    expect(await loss.getAttribute('aria-label')).toMatch(/^Training loss by step, smoothed 0.6; last values: script · \w{6} [\d.]+, script · \w{6} [\d.]+$/);
    expect(await page.getByTestId('compare-differences').innerText()).toMatch(/target\.command/);
    await page.getByTestId('compare').screenshot({ path: path.join(SHOTS, 'script-run-compare.png') });
    await page.close();
  }, 60_000);

  it('without --allow-scripts says scripts are refused and how to allow them', async () => {
    const page = await refused.browser.newPage({ viewport: { width: 1280, height: 900 } });
    await startScript(page, refused.serve.url, `${PYTHON} ${TUTORIAL} --epochs 1`);
    const text = await page.getByTestId('newrun-script-forbidden').innerText();
    expect(text).toContain('trainbench serve --allow-scripts');
    expect(text).toContain('desktop app');
    await page.screenshot({ path: path.join(SHOTS, 'script-run-refused.png'), fullPage: true });
    await page.close();
  }, 30_000);
});
