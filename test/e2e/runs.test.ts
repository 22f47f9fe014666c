// The Runs area in Chromium: a run trained through the CLI is listed and charted.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { CLI } from '../helpers/repo';

const fx = serveInChromium({
  timeoutMs: 120_000,
  async prepare(workspace) {
    await promisify(execFile)(process.execPath, [CLI, 'train', '--model', 'mlp', '--max-steps', '60', '--json', '--workspace', workspace]);
    // A damaged run is listed with its problem, not dropped.
    mkdirSync(path.join(workspace, 'runs', '19990101-000000-broken'), { recursive: true });
    writeFileSync(path.join(workspace, 'runs', '19990101-000000-broken', 'run.json'), '{ not json');
  },
});

describe('Runs area', () => {
  it('lists runs and charts the selected one', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(fx.serve.url);
    await page.getByTestId('nav-runs').click();
    await page.getByTestId('runs-table').waitFor();
    const rows = page.locator('[data-testid^="run-2"]');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().innerText()).toMatch(/mlp on fashion-mnist-train \(60000 records\)/);
    expect(await page.getByTestId('run-19990101-000000-broken').innerText()).toMatch(/unreadable/);
    await rows.first().click();
    await page.getByTestId('run-detail').waitFor();
    for (const chart of ['run-loss-chart', 'run-phase-chart', 'run-memory-chart']) {
      expect(await page.locator(`[data-testid="${chart}"] canvas`).count()).toBeGreaterThan(0);
    }
    expect(await page.getByTestId('run-backend').innerText()).toMatch(/^cpu · fp32 · steady clock/);
    await page.screenshot({ path: path.join(SHOTS, 'runs.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
