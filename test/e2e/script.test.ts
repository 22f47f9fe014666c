// Issue 14 (in the app): a Script target benchmarked from the Benchmarks area in Chromium through
// `trainbench serve --allow-scripts` (the tutorial fixture under Debian's python3 with torch), and
// the refusal a serve without --allow-scripts shows instead.
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { PYTHON, SCRIPTS } from '../script/script-helpers';

const TUTORIAL = path.join(SCRIPTS, 'fashion_mnist_tutorial.py');
const TINY = path.join(SCRIPTS, 'tiny_train.py');
const allowed = serveInChromium({ serveArgs: ['--allow-scripts'] });
const refused = serveInChromium();

async function fillScript(page: import('playwright-core').Page, url: string, o: { command?: string; warmup?: number; steps?: number } = {}): Promise<void> {
  await page.goto(`${url}#/benchmarks`);
  await page.getByTestId('target-script').check();
  await page.locator('[data-test="script-command"]').fill(o.command ?? `${PYTHON} ${TUTORIAL} --epochs 1 --limit 2048`);
  await page.locator('[data-test="script-cwd"]').fill(SCRIPTS);
  await page.locator('[data-test="script-warmup"]').fill(String(o.warmup ?? 2));
  await page.locator('[data-test="script-steps"]').fill(o.steps === undefined ? '' : String(o.steps));
  await page.locator('[data-test="script-repeat"]').fill('1');
  await page.locator('[data-test="script-start"]').click();
}

/** Every text the status line above the output shows, in order, however briefly (a MutationObserver in the page). */
async function recordStatuses(page: import('playwright-core').Page): Promise<() => Promise<string[]>> {
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { statuses: string[] }).statuses = seen;
    new MutationObserver(() => {
      const text = document.querySelector('[data-test="script-status"]')?.textContent ?? null;
      if (text !== null && text !== seen[seen.length - 1]) seen.push(text);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  return () => page.evaluate(() => (window as unknown as { statuses: string[] }).statuses);
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
    expect(await row.first().innerText()).toMatch(/[\d,]+ one launch: no interval/); // 1 launch: a median with no interval, said so
    // Issue 26: the probe's FLOP count (an estimate) against torch's own matmul rate on this CPU.
    expect(await page.locator('[data-testid^="script-benchmark-utilisation-"]').first().innerText()).toMatch(
      /^Utilisation \(estimate\): [\d.]+ GFLOP\/s of model arithmetic: \d+\.\d% of the \d+ GFLOP\/s measured on this device \(torch\.mm on cpu/,
    );
    // Issue 26 items 3-4: the floors beside the step, and on the CPU no copy floor and no energy, each saying why.
    expect(await page.locator('[data-testid^="script-benchmark-floors-"] summary').first().innerText()).toMatch(
      /^Floors per step: compute [\d.]+ ms \(step [\d.]+x\) · copy not measured · data not measured$/,
    );
    expect(await page.locator('[data-testid^="script-benchmark-energy-"]').first().innerText()).toMatch(/^Energy: not measured: the target trains on the CPU/);
    await page.screenshot({ path: path.join(SHOTS, 'script-result.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it("says above the output what the launch does: the warm-up, measured step x of N, and the probe's stop, which is not a crash", async () => {
    const page = await allowed.browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // 500 steps in the epoch; the probe ends the launch after 2 warm-up and 300 measured ones.
    await fillScript(page, allowed.serve.url, { command: `${PYTHON} ${TUTORIAL} --epochs 1 --limit 32000`, warmup: 2, steps: 300 });
    const statuses = await recordStatuses(page);
    await page.locator('[data-test="confirm-run"]').click();
    const status = page.locator('[data-test="script-status"]');
    await expect.poll(() => status.innerText(), { timeout: 60_000 }).toMatch(/^finished: /);
    expect(await status.innerText()).toBe('finished: 1 launch measured, each stopped by Trainbench after its 300 measured steps, as asked');
    expect(await status.getAttribute('data-tone')).toBe('done');
    const seen = await statuses();
    expect(seen[0]).toBe('starting the command…');
    expect(seen.some((t) => /^warming up: step [12] of 2 \(not measured\)$/.test(t))).toBe(true);
    expect(seen.some((t) => /^measuring step \d+ of 300$/.test(t))).toBe(true);
    expect(seen).toContain('stopping the script after the 300 measured steps (302 optimizer steps with the warm-up), as asked: not a crash');
    expect(seen.some((t) => /failed|crash(?!\))/.test(t.replace('not a crash', '')))).toBe(false);
    // The output ends mid-epoch, at the probe's stop (inside the 302nd optimizer step, before the script printed it).
    const output = await page.locator('[data-test="script-output"]').innerText();
    expect(output).toContain('step 301');
    expect(output).not.toContain('Done!');
    await page.screenshot({ path: path.join(SHOTS, 'script-status-stopped.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('a script that crashes still reads as a crash on the status line', async () => {
    const page = await allowed.browser.newPage({ viewport: { width: 1280, height: 1000 } });
    await fillScript(page, allowed.serve.url, { command: `${PYTHON} ${TINY} crash`, warmup: 1, steps: 10 });
    const statuses = await recordStatuses(page);
    await page.locator('[data-test="confirm-run"]').click();
    const status = page.locator('[data-test="script-status"]');
    await expect.poll(() => status.getAttribute('data-tone'), { timeout: 40_000 }).toBe('error');
    expect(await status.innerText()).toBe('the launch failed: the script exited with code 1 after 3 optimizer step(s)');
    expect((await statuses()).some((t) => t.startsWith('stopping'))).toBe(false);
    expect(await page.locator('[data-test="script-output"]').innerText()).toContain('the model exploded at step 3');
    await page.screenshot({ path: path.join(SHOTS, 'script-status-crash.png'), fullPage: true });
    await page.close();
  }, 60_000);

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
