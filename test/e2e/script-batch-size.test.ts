// Issue 14 (in the app): the Batch size area's Script target in Chromium through `trainbench serve
// --allow-scripts`: the OOM-guard fixture (an out-of-memory error at batch >= 20) searched live, a
// hanging script cancelled with nothing left running, and the refusal a serve without the flag shows.
import path from 'node:path';

import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { newMark, processesWithMark, PYTHON, SCRIPTS } from '../script/script-helpers';

const OOM_GUARD = path.join(SCRIPTS, 'oom_guard.py');
const TINY = path.join(SCRIPTS, 'tiny_train.py');
const allowed = serveInChromium({ serveArgs: ['--allow-scripts'] });
const refused = serveInChromium();

async function fillSearch(page: Page, url: string, command: string, env: Record<string, string>): Promise<void> {
  await page.goto(`${url}#/batch-size`);
  await page.getByTestId('target-script').check();
  await page.locator('[data-test="script-command"]').fill(command);
  await page.locator('[data-test="script-cwd"]').fill(SCRIPTS);
  for (const [i, [name, value]] of Object.entries(env).entries()) {
    await page.locator('[data-test="script-env-add"]').click();
    await page.locator('[data-test="script-env-name"]').nth(i).fill(name);
    await page.locator('[data-test="script-env-value"]').nth(i).fill(value);
  }
  await page.locator('[data-test="sbs-start-batch"]').fill('16');
  await page.locator('[data-test="sbs-warmup"]').fill('1');
  await page.locator('[data-test="sbs-steps"]').fill('3');
  await page.getByTestId('sbs-start').click();
}

describe('Script target in the Batch size area', () => {
  it('confirms the command, shows each trial live in the chart and table, and gives the verdict', async () => {
    const page = await allowed.browser.newPage({ viewport: { width: 1280, height: 1400 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const mark = newMark();
    await fillSearch(page, allowed.serve.url, `${PYTHON} ${OOM_GUARD}`, { OOM_AT: '20', TB_TEST_MARK: mark });
    expect(await page.locator('[data-test="confirm-command"]').innerText()).toBe(`${PYTHON} ${OOM_GUARD}`);
    expect(await page.locator('[data-test="confirm-env"]').allInnerTexts()).toEqual(['OOM_AT=20', `TB_TEST_MARK=${mark}`]);
    // The engine's own numbers (repeat, measured steps) are not the search's: they are hidden here.
    expect(await page.locator('[data-test="script-repeat"]').count()).toBe(0);
    expect(await page.getByTestId('sbs-plan').innerText()).toContain('from 16, doubling to the first failure (at most 65,536), then halving the gap; 1 warm-up + 3 measured steps each');
    await page.screenshot({ path: path.join(SHOTS, 'script-batch-size-confirm.png'), fullPage: true });
    await page.locator('[data-test="confirm-run"]').click();
    // Live: the first trial is in the table while the search still runs.
    await page.getByTestId('sbs-trials').locator('tbody tr').first().waitFor({ timeout: 60_000 });
    expect(await page.getByTestId('sbs-running').isVisible()).toBe(true);
    // The status line says the trial's launch was ended on purpose (or that an OOM is a data point), not that it crashed.
    expect(await page.locator('[data-test="script-status"]').innerText()).toMatch(
      /^trial \d, batch \d+: (trained at [\d,]+ samples\/s, stopped by Trainbench after its measured steps, as asked|out of memory \(a data point of the search, not a failure\)); the next trial is starting…$/,
    );
    const verdict = page.getByTestId('sbs-verdict');
    await verdict.waitFor({ timeout: 120_000 });
    expect(await verdict.innerText()).toMatch(/^batch 19 is the largest that fits \(20: out of memory\); fastest: (16|18|19)$/);
    const rows = await page.getByTestId('sbs-trials').locator('tbody tr').allInnerTexts();
    expect(rows.map((r) => r.split('\t').slice(1, 3).join(' '))).toEqual([
      '16 trained', '32 out of memory', '24 out of memory', '20 out of memory', '18 trained', '19 trained',
    ]);
    const chart = page.getByTestId('batch-size-chart');
    await chart.locator('canvas').first().waitFor();
    expect(await chart.getAttribute('aria-label')).toMatch(/batch 16: [\d,]+ samples\/s; batch 18: .*; out of memory at batch 20, 24, 32$/);
    expect(await page.getByTestId('sbs-summary').innerText()).toContain('cpu (a batch fits when it trains)');
    expect(await page.locator('[data-test="script-output"]').innerText()).toContain('OutOfMemoryError: CUDA out of memory. Tried to allocate 2048 MiB (simulated at batch 32)');
    expect(await page.locator('[data-test="script-status"]').innerText()).toBe("finished: 6 trials; Trainbench ends each trial's launch after its measured steps, so its output stops mid-epoch");
    await page.screenshot({ path: path.join(SHOTS, 'script-batch-size.png'), fullPage: true });
    expect(processesWithMark(mark)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 200_000);

  it('Cancel kills the trial in flight with its processes and says the search was cancelled', async () => {
    const page = await allowed.browser.newPage({ viewport: { width: 1280, height: 1100 } });
    const mark = newMark();
    // tiny_train.py hang: after 2 steps it starts a child and sleeps, so the first trial never ends by itself.
    await fillSearch(page, allowed.serve.url, `${PYTHON} ${TINY} hang`, { TB_TEST_MARK: mark });
    await page.locator('[data-test="confirm-run"]').click();
    await expect.poll(() => page.locator('[data-test="script-output"]').innerText(), { timeout: 60_000 }).toContain('hanging now');
    await expect.poll(() => processesWithMark(mark).length, { timeout: 5_000 }).toBeGreaterThanOrEqual(2);
    await page.getByTestId('sbs-cancel').click();
    const error = page.getByTestId('sbs-error');
    await error.waitFor({ timeout: 30_000 });
    expect(await error.innerText()).toMatch(/^the batch-size search was cancelled during the trial at batch 16, after 0 finished trial\(s\)/);
    expect(await error.getAttribute('class')).toBe('notice');
    expect(await page.getByTestId('sbs-running').count()).toBe(0);
    expect(await page.getByTestId('sbs-cancel').isDisabled()).toBe(true);
    expect(await page.locator('[data-test="script-status"]').innerText()).toBe('cancelled after 0 trials: the launch in flight was stopped');
    expect(processesWithMark(mark)).toEqual([]);
    await page.screenshot({ path: path.join(SHOTS, 'script-batch-size-cancelled.png'), fullPage: true });
    await page.close();
  }, 120_000);

  it('without --allow-scripts says scripts are refused and how to allow them', async () => {
    const page = await refused.browser.newPage({ viewport: { width: 1280, height: 1000 } });
    await fillSearch(page, refused.serve.url, `${PYTHON} ${OOM_GUARD}`, {});
    await page.locator('[data-test="confirm-run"]').click();
    const text = await page.getByTestId('sbs-forbidden').innerText();
    expect(text).toContain('trainbench serve --allow-scripts');
    expect(text).toContain('desktop app');
    expect(text).toContain('does not start commands');
    await page.screenshot({ path: path.join(SHOTS, 'script-batch-size-refused.png'), fullPage: true });
    await page.close();
  }, 30_000);
});
