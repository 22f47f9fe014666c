// Issue 41 item 3, "Reload keeps the picture": a training run joined late (a reload on the Runs area, the area
// opened again, a reload elsewhere and the Runs area opened after) draws its loss curve from its first logged
// step, every step on it, not a line from where the page joined; and the greyed-out forms of a running job
// (New run, Batch size, Optimise) show that job's settings, not the defaults.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';

import { serveInChromium } from '../helpers/e2e';

const fx = serveInChromium({ timeoutMs: 120_000 });
const SHOTS = '/tmp/renderer-shots';
mkdirSync(SHOTS, { recursive: true });

const stepOf = async (page: Page) => Number(/step ([\d,]+) \//.exec(await page.getByTestId('live-step').innerText())?.[1].replace(/,/g, '') ?? -1);

/** What the live loss chart was handed: its points, its first and its newest step. */
async function curveOf(page: Page): Promise<{ points: number; first: number; last: number }> {
  const chart = page.getByTestId('live-loss-chart');
  const [points, first, last] = await Promise.all(['data-points', 'data-first-step', 'data-last-step'].map((a) => chart.getAttribute(a)));
  return { points: Number(points), first: Number(first ?? NaN), last: Number(last ?? NaN) };
}

const runIds = () => (existsSync(path.join(fx.workspace, 'runs')) ? readdirSync(path.join(fx.workspace, 'runs')) : []);

/** The run's recorded step events (events.jsonl), as globalSteps in order. */
function recordedSteps(runId: string): number[] {
  const text = readFileSync(path.join(fx.workspace, 'runs', runId, 'events.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter((l) => l.startsWith('{') && l.endsWith('}'))
    .map((l) => JSON.parse(l) as { type: string; globalStep?: number })
    .filter((e) => e.type === 'step')
    .map((e) => e.globalStep!);
}

/**
 * The chart starts at the run's first logged step and holds every recorded step up to its newest one: no straight
 * line over steps it missed. (A step or two may be in the chart before the file has it written.)
 */
async function expectWholeCurve(page: Page, runId: string): Promise<void> {
  await expect.poll(async () => (await curveOf(page)).points, { timeout: 15_000 }).toBeGreaterThan(0);
  const curve = await curveOf(page);
  const steps = recordedSteps(runId);
  const upToLast = steps.filter((s) => s <= curve.last).length;
  // The record beside the curve in the message: where a gap falls says where it came from (the record, the replay, live).
  const seen = `curve ${JSON.stringify(curve)}, recorded ${steps.join(',')}`;
  expect(curve.first, seen).toBe(steps[0]);
  expect(curve.points, seen).toBeGreaterThanOrEqual(upToLast - 2);
  expect(curve.points, seen).toBeLessThanOrEqual(upToLast + 2);
}

/** A test that failed halfway leaves its job running: cancelled here, through the status bar, so the next test starts with none. */
afterEach(async () => {
  const page = await fx.browser.newPage();
  try {
    await page.goto(`${fx.serve.url}#/`);
    await page.getByTestId('jobs-indicator').waitFor();
    await page.waitForTimeout(500);
    if (Number(await page.getByTestId('jobs-indicator').getAttribute('data-count')) > 0) {
      await page.getByTestId('jobs-toggle').click();
      for (const button of await page.locator('[data-testid^="job-cancel-"]').all()) await button.click();
      await expect.poll(() => page.getByTestId('jobs-indicator').getAttribute('data-count'), { timeout: 60_000 }).toBe('0');
    }
  } finally {
    await page.close();
  }
}, 90_000);

// Tried once more: on a loaded 2-core CI machine the live curve has twice missed 3-5 of its ~40-250 recorded steps
// (a late replay step was dropped then; it is put in its place now, and the record is merged with the live steps).
// A gap that comes back every time still fails.
describe('a reload keeps the picture', { retry: 1 }, () => {
  it('New run: the live curve is the whole run after a reload, the area opened again, or a reload elsewhere; the form shows the run', async () => {
    const errors: string[] = [];
    const page = await fx.browser.newPage({ viewport: { width: 1440, height: 1100 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('new-run').waitFor();
    await page.getByTestId('newrun-model').selectOption('mlp');
    await page.getByTestId('newrun-data').selectOption('fashion-mnist');
    await page.getByTestId('newrun-batchSize').fill('32');
    await page.getByTestId('newrun-epochs').fill('20'); // far more than the test waits for: it is cancelled
    // The run this attempt starts: a retry finds the first attempt's run in the folder too.
    const runsBefore = new Set(runIds());
    await page.getByTestId('newrun-start').click();
    // Enough steps that a line from 0 (or from where the page joined) would show.
    await expect.poll(() => stepOf(page), { timeout: 90_000 }).toBeGreaterThan(300);
    const [runId] = runIds().filter((id) => !runsBefore.has(id));

    // A reload on the Runs area.
    await page.reload();
    await page.getByTestId('live-run').waitFor({ timeout: 15_000 });
    await expectWholeCurve(page, runId);
    // The greyed-out form shows what runs, not the recipe's defaults (mlp's batch is 64, its epochs 1... or whatever they are).
    expect(await page.getByTestId('newrun-batchSize').inputValue()).toBe('32');
    expect(await page.getByTestId('newrun-epochs').inputValue()).toBe('20');
    expect(await page.getByTestId('newrun-model').inputValue()).toBe('mlp');
    expect(await page.getByTestId('newrun-batchSize').isDisabled()).toBe(true);
    await page.waitForTimeout(1500);
    await page.screenshot({ path: path.join(SHOTS, 'reload-live-run-1440.png') });

    // The area left and opened again: the chart mounts anew and still draws the whole run.
    await page.getByTestId('nav-dashboard').click();
    await page.waitForTimeout(2000);
    await page.getByTestId('nav-runs').click();
    await page.getByTestId('live-run').waitFor({ timeout: 15_000 });
    await expectWholeCurve(page, runId);

    // A reload on another area, then the Runs area opened seconds later: its store is made then, after the jobs were listed.
    await page.setViewportSize({ width: 1024, height: 1100 });
    await page.goto(`${fx.serve.url}#/`);
    await page.reload();
    await page.getByTestId('jobs-indicator').waitFor();
    await expect.poll(() => page.getByTestId('jobs-indicator').innerText()).toBe('1 job running');
    await page.waitForTimeout(3000);
    await page.getByTestId('nav-runs').click();
    await page.getByTestId('live-run').waitFor({ timeout: 15_000 });
    await expectWholeCurve(page, runId);
    const before = await curveOf(page);
    // Then live: it grows from there.
    await expect.poll(async () => (await curveOf(page)).last, { timeout: 20_000 }).toBeGreaterThan(before.last);
    await expectWholeCurve(page, runId);
    expect(await page.getByTestId('newrun-batchSize').inputValue()).toBe('32');
    await page.screenshot({ path: path.join(SHOTS, 'reload-live-run-1024.png') });

    await page.getByTestId('live-cancel').click();
    await page.getByTestId('live-run').waitFor({ state: 'detached', timeout: 30_000 });
    // The form keeps the run's settings, to run it again.
    expect(await page.getByTestId('newrun-batchSize').inputValue()).toBe('32');
    expect(await page.getByTestId('newrun-batchSize').isEnabled()).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  }, 240_000);

  it('Batch size and Optimise: the greyed-out form of a running job shows its settings after a reload', async () => {
    const errors: string[] = [];
    const page = await fx.browser.newPage({ viewport: { width: 1440, height: 1100 } });
    page.on('pageerror', (e) => errors.push(e.message));

    await page.goto(`${fx.serve.url}#/batch-size`);
    await page.getByTestId('bs-model').selectOption('mlp');
    await page.getByTestId('bs-memory-limit').fill('300');
    await page.getByTestId('bs-headroom').fill('20');
    await page.getByTestId('bs-steps').fill('400'); // a first trial far longer than the test: it is cancelled
    await page.getByTestId('bs-start').click();
    await page.getByTestId('bs-running').waitFor();
    await page.reload();
    await page.getByTestId('bs-running').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.getByTestId('bs-steps').inputValue()).toBe('400');
    expect(await page.getByTestId('bs-model').inputValue()).toBe('mlp');
    expect(await page.getByTestId('bs-memory-limit').inputValue()).toBe('300');
    expect(await page.getByTestId('bs-headroom').inputValue()).toBe('20');
    expect(await page.getByTestId('bs-start').isDisabled()).toBe(true);
    await page.screenshot({ path: path.join(SHOTS, 'reload-batch-size-form-1440.png') });
    await page.getByTestId('bs-cancel').click();
    await page.getByTestId('bs-running').waitFor({ state: 'detached', timeout: 60_000 });
    await expect.poll(() => page.getByTestId('jobs-indicator').innerText(), { timeout: 30_000 }).toBe('no jobs running');

    await page.goto(`${fx.serve.url}#/optimise`);
    await page.getByTestId('area-optimise').waitFor();
    const values: Record<string, string> = { loaderWorkers: '0', prefetch: '1', threads: '1', batchSize: '48', repeat: '3', maxTrials: '7', steps: '300', warmupSteps: '2' };
    for (const [field, value] of Object.entries(values)) await page.getByTestId(`opt-${field}`).fill(value);
    await page.getByTestId('opt-start').click();
    await page.getByTestId('opt-progress').waitFor();
    await page.reload();
    await page.getByTestId('opt-progress').waitFor({ timeout: 15_000 });
    for (const [field, value] of Object.entries(values)) await expect.poll(() => page.getByTestId(`opt-${field}`).inputValue(), { timeout: 5_000 }).toBe(value);
    expect(await page.getByTestId('opt-start').isDisabled()).toBe(true);
    await page.setViewportSize({ width: 1024, height: 1100 });
    await page.screenshot({ path: path.join(SHOTS, 'reload-optimise-form-1024.png') });
    await page.getByTestId('opt-cancel').click();
    await page.getByTestId('opt-error').waitFor({ timeout: 60_000 });
    // The form keeps what ran.
    expect(await page.getByTestId('opt-batchSize').inputValue()).toBe('48');
    expect(errors).toEqual([]);
    await page.close();
  }, 240_000);
});
