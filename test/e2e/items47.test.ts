// Issue 41 items 4 and 7 in Chromium: the first run's example opens without a warning and says how long it takes; its
// start says what it does (the data made ready, the engine's first repetition) with a clock that runs; the Runs list
// names the optimisation by its data and says where its wizard stands; the run and the Optimise card link to each other.
import path from 'node:path';

import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

import { serveInChromium } from '../helpers/e2e';

const SHOTS = '/tmp/items47-shots';
const fx = serveInChromium({ timeoutMs: 120_000 });

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
const text = (page: Page, id: string) => page.getByTestId(id).innerText();

describe('first run and an optimisation named right (issue 41 items 4 and 7)', () => {
  it('opens the example without a warning, shows its start, names its run and links run and card both ways', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1440, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(fx.serve.url);
    await page.getByTestId('first-run').waitFor();
    // An estimate from the settings and this machine, not "a few minutes"; the script's button says what it opens.
    await expect.poll(() => text(page, 'first-run-example-text')).toMatch(/At most 45 short runs of 10 steps: about \d+–\d+ minutes on (this computer's \d+ CPU cores?|the GPU)/);
    expect(await text(page, 'first-run-example-text')).not.toContain('a few minutes');
    expect(await text(page, 'first-run-script')).toBe('Type my command');
    expect(await text(page, 'first-run')).not.toContain('opens filled in');
    await shot(page, 'first-run-1440');

    await page.getByTestId('first-run-example').click();
    await page.getByTestId('area-optimise').waitFor();
    await expect.poll(() => page.getByTestId('opt-data').inputValue()).toBe('example-board');
    // The defaults do not warn (on the CPU the batch-size search is left unticked: no memory limit to search).
    const device = await page.getByTestId('opt-device').inputValue();
    if (device === 'cpu') expect(await page.getByTestId('opt-batchSearch').isChecked()).toBe(false);
    expect(await page.getByTestId('opt-batchSearch-why').count()).toBe(0);
    expect(await page.locator('.warning').count()).toBe(0);
    await shot(page, 'first-run-example-form-1440');

    // A short wizard on the example: its first use makes the data, then the engine measures.
    for (const [field, value] of Object.entries({ repeat: '2', steps: '2', warmupSteps: '1', maxTrials: '1' })) await page.getByTestId(`opt-${field}`).fill(value);
    await page.getByTestId('opt-start').click();
    await page.getByTestId('opt-progress').waitFor();
    // The data's own words, with a bar, while the example's positions are made and cached.
    await expect.poll(() => text(page, 'opt-progress-text'), { timeout: 30_000 }).toMatch(/^preparing the data: (making the example's 20,000 board positions|caching)/);
    await shot(page, 'start-preparing-1440');
    // The clock runs between events: not "0:00" a few seconds in.
    await expect.poll(() => text(page, 'opt-eta'), { timeout: 10_000 }).toMatch(/^elapsed 0:0[2-9]|^elapsed 0:[1-5]\d/);
    // Then the baseline is said before its first repetition (which also starts the engine).
    await expect.poll(() => text(page, 'opt-progress-text'), { timeout: 90_000 }).toMatch(/^baseline: (measuring repetition 1 of 2|repetition \d of 2 done)/);
    await shot(page, 'start-baseline-1440');

    // The Optimise card names its run and links to it.
    const runLink = page.getByTestId('opt-shown').getByTestId('opt-run-link');
    await runLink.waitFor({ timeout: 30_000 });
    const runId = /^run (\S+)$/.exec(await runLink.innerText())![1];
    const wizardId = /^(\S+) · /.exec(await page.getByTestId('opt-shown').locator('p.muted').first().innerText())![1];
    expect(await runLink.getAttribute('href')).toBe(`#/runs?run=${runId}`);

    // The Runs list: named by its data as the Optimise area names it, its wizard's progress, a link to its card.
    const runs = await fx.browser.newPage({ viewport: { width: 1440, height: 900 } });
    runs.on('pageerror', (e) => errors.push(e.message));
    await runs.goto(`${fx.serve.url}#/runs`);
    const row = runs.getByTestId(`run-${runId}`);
    await row.waitFor();
    expect(await row.getByTestId('run-name').innerText()).toBe('bottleneck_resnet on example-board');
    expect(await row.getByTestId('run-name').getAttribute('title')).toBe('optimisation: bottleneck_resnet on example-board');
    expect(await row.getByTestId('run-status').innerText()).not.toContain('before its first step');
    await expect.poll(() => row.getByTestId('run-status').innerText(), { timeout: 120_000 }).toMatch(/^running\s*trial 1 of at most 1: .+, pair [12] of 2$/);
    await shot(runs, 'runs-trial-1440');
    await runs.setViewportSize({ width: 1024, height: 768 });
    await row.scrollIntoViewIfNeeded();
    expect(await runs.locator('.shell__main').evaluate((main) => main.scrollWidth - main.clientWidth)).toBe(0);
    await shot(runs, 'runs-trial-1024');

    // Runs -> Optimise: the link opens this wizard's card.
    const wizardLink = row.getByTestId(`run-wizard-link-${runId}`);
    expect(await wizardLink.innerText()).toBe('in Optimise');
    expect(await wizardLink.getAttribute('title')).toContain(`Optimisation ${wizardId}`);
    await wizardLink.click();
    await runs.getByTestId('area-optimise').waitFor();
    await expect.poll(() => runs.getByTestId('opt-shown').locator('p.muted').first().innerText(), { timeout: 15_000 }).toMatch(new RegExp(`^${wizardId} · running`));
    // The link is the wizard's own URL, kept while its card is shown.
    expect(new URL(runs.url()).hash).toBe(`#/optimise?wizard=${wizardId}`);
    await shot(runs, 'optimise-from-run-1024');
    // Optimise -> Runs: the card's link opens the run's page.
    await runs.getByTestId('opt-shown').getByTestId('opt-run-link').click();
    await runs.getByTestId('run-detail').waitFor();
    expect(runs.url()).toContain(`#/runs?run=${runId}`);
    expect(await text(runs, 'run-wizard')).toContain(`A run of optimisation ${wizardId}`);
    await shot(runs, 'run-detail-1024');
    await runs.close();

    await page.getByTestId('opt-cancel').click();
    await page.getByTestId('opt-error').waitFor({ timeout: 60_000 });
    await page.setViewportSize({ width: 1024, height: 768 });
    await shot(page, 'optimise-cancelled-1024');
    // A fresh window follows no job: the Runs entry's link alone opens the (now cancelled) wizard's card.
    const later = await fx.browser.newPage({ viewport: { width: 1024, height: 768 } });
    later.on('pageerror', (e) => errors.push(e.message));
    await later.goto(`${fx.serve.url}#/runs?run=${runId}`);
    await later.getByTestId('run-detail').waitFor();
    await expect.poll(() => later.getByTestId('run-detail').getByTestId('run-status').innerText().then((t) => t.split('\n')[0]), { timeout: 15_000 }).toBe('cancelled');
    await later.getByTestId('run-wizard-open').click();
    await expect.poll(() => later.getByTestId('opt-shown').locator('p.muted').first().innerText(), { timeout: 15_000 }).toMatch(new RegExp(`^${wizardId} · cancelled`));
    await shot(later, 'optimise-linked-cancelled-1024');
    await later.close();
    expect(errors).toEqual([]);
    await page.close();
  }, 300_000);
});
