// Issue 14 (in the app): a Script target benchmarked from the Benchmarks area in Chromium through
// `trainbench serve --allow-scripts` (the tutorial fixture under Debian's python3 with torch), and
// the refusal a serve without --allow-scripts shows instead.
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { PYTHON, SCRIPTS } from '../script/script-helpers';

const TUTORIAL = path.join(SCRIPTS, 'fashion_mnist_tutorial.py');
const allowed = serveInChromium({ serveArgs: ['--allow-scripts'] });
const refused = serveInChromium();

async function fillScript(page: import('playwright-core').Page, url: string): Promise<void> {
  await page.goto(`${url}#/benchmarks`);
  await page.getByTestId('target-script').check();
  await page.locator('[data-test="script-command"]').fill(`${PYTHON} ${TUTORIAL} --epochs 1 --limit 2048`);
  await page.locator('[data-test="script-cwd"]').fill(SCRIPTS);
  await page.locator('[data-test="script-warmup"]').fill('2');
  await page.locator('[data-test="script-steps"]').fill('');
  await page.locator('[data-test="script-repeat"]').fill('1');
  await page.locator('[data-test="script-start"]').click();
}

describe('Script target in the Benchmarks area', () => {
  it('confirms the command, streams its output live and lists the result under the command', async () => {
    const page = await allowed.browser.newPage({ viewport: { width: 1280, height: 1200 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await fillScript(page, allowed.serve.url);
    expect(await page.locator('[data-test="confirm-command"]').innerText()).toBe(`${PYTHON} ${TUTORIAL} --epochs 1 --limit 2048`);
    expect(await page.locator('[data-test="confirm-cwd"]').innerText()).toBe(SCRIPTS);
    await page.screenshot({ path: path.join(SHOTS, 'script-confirm.png'), fullPage: true });
    await page.locator('[data-test="confirm-run"]').click();
    await expect.poll(() => page.locator('[data-test="script-output"]').innerText(), { timeout: 40_000 }).toMatch(/num_workers=0 batch_size=64/);
    const row = page.locator('[data-testid^="script-benchmark-2"]');
    await row.first().waitFor({ timeout: 40_000 });
    expect(await page.locator('[data-test="script-output"]').innerText()).toMatch(/Done! steps=\d+/);
    expect(await row.first().innerText()).toContain(`${PYTHON} ${TUTORIAL} --epochs 1 --limit 2048`);
    expect(await row.first().innerText()).toMatch(/[\d,]+ \[[\d,]+, [\d,]+\]/);
    // Issue 26: the probe's FLOP count (an estimate) against torch's own matmul rate on this CPU.
    expect(await page.locator('[data-testid^="script-benchmark-utilisation-"]').first().innerText()).toMatch(
      /^Utilisation \(estimate\): [\d.]+ GFLOP\/s of model arithmetic: \d+\.\d% of the \d+ GFLOP\/s measured on this device \(torch\.mm on cpu/,
    );
    await page.screenshot({ path: path.join(SHOTS, 'script-result.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('without --allow-scripts says scripts are refused and how to allow them', async () => {
    const page = await refused.browser.newPage({ viewport: { width: 1280, height: 900 } });
    await fillScript(page, refused.serve.url);
    await page.locator('[data-test="confirm-run"]').click();
    const text = await page.locator('[data-test="script-forbidden"]').innerText();
    expect(text).toContain('trainbench serve --allow-scripts');
    await page.screenshot({ path: path.join(SHOTS, 'script-refused.png'), fullPage: true });
    await page.close();
  }, 30_000);
});
