// An optimisation started by the CLI (`trainbench optimise`) while the workbench is open on the same workspace: the
// Optimise area watches it through its saved state, and its form is greyed out with the CLI's settings, not its
// own defaults, with Optimise off, so a second wizard cannot be started beside it to disturb both measurements. The
// optimisation shown has its own URL, and the built-in example stays one click away in a used workspace.
import { spawn } from 'node:child_process';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { REPO_ROOT } from '../helpers/repo';

const fx = serveInChromium({ timeoutMs: 120_000 });

describe("the Optimise area watching the CLI's wizard", () => {
  it("greys out the form with the running wizard's settings and keeps Optimise off until it ends", async () => {
    // Long repetitions: the wizard runs until it is stopped.
    const args = ['optimise', '--workspace', fx.workspace, '--batch-size', '48', '--loader-workers', '0', '--prefetch', '1', '--threads', '1', '--repeat', '3', '--steps', '400', '--max-trials', '7'];
    const cli = spawn(process.execPath, [path.join(REPO_ROOT, 'bin/trainbench.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const ended = new Promise<number | null>((resolve) => cli.on('exit', (code) => resolve(code)));
    let said = '';
    cli.stdout.on('data', (b: Buffer) => (said += b.toString()));
    cli.stderr.on('data', (b: Buffer) => (said += b.toString()));
    const errors: string[] = [];
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1100 } });
    page.on('pageerror', (e) => errors.push(e.message));
    try {
      // Its saved state exists once the baseline starts (the first use caches Fashion-MNIST first).
      await expect.poll(() => said, { timeout: 90_000 }).toMatch(/baseline/);
      await page.goto(`${fx.serve.url}#/optimise`);
      await page.getByTestId('area-optimise').waitFor();
      await expect.poll(() => page.getByTestId('opt-shown').locator('p').first().innerText(), { timeout: 30_000 }).toContain('running elsewhere (watched)');
      const shown: Record<string, string> = { batchSize: '48', loaderWorkers: '0', prefetch: '1', threads: '1', repeat: '3', steps: '400', maxTrials: '7' };
      for (const [field, value] of Object.entries(shown)) {
        await expect.poll(() => page.getByTestId(`opt-${field}`).inputValue(), { timeout: 5_000 }).toBe(value);
        expect(await page.getByTestId(`opt-${field}`).isDisabled(), field).toBe(true);
      }
      expect(await page.getByTestId('opt-start').isDisabled()).toBe(true);
      await page.screenshot({ path: path.join(SHOTS, 'optimise-watched-cli.png'), fullPage: true });

      // The CLI stopped as a person stops it (Ctrl-C): the area says so and the form is the user's again, keeping what ran.
      cli.kill('SIGINT');
      expect(await ended).not.toBeNull();
      await expect.poll(() => page.getByTestId('opt-start').isDisabled(), { timeout: 30_000 }).toBe(false);
      expect(await page.getByTestId('opt-batchSize').inputValue()).toBe('48');
      expect(await page.getByTestId('opt-batchSize').isDisabled()).toBe(false);

      // The optimisation shown has its own URL: a reload, or the link pasted into another tab, shows it again.
      const id = /^(\S+) · /.exec(await page.getByTestId('opt-shown').locator('p').first().innerText())![1];
      await expect.poll(() => new URL(page.url()).hash).toBe(`#/optimise?wizard=${id}`);
      await page.reload();
      await expect.poll(() => page.getByTestId('opt-shown').locator('p').first().innerText(), { timeout: 15_000 }).toMatch(new RegExp(`^${id} · (cancelled|interrupted)`));
      const pasted = await fx.browser.newPage({ viewport: { width: 1280, height: 1100 } });
      await pasted.goto(`${fx.serve.url}#/optimise?wizard=${id}`);
      await expect.poll(() => pasted.getByTestId('opt-shown').locator('p').first().innerText(), { timeout: 15_000 }).toMatch(new RegExp(`^${id} · `));
      await pasted.close();
      // Away and back through the sidebar: the URL names it again.
      await page.getByTestId('nav-runs').click();
      await page.getByTestId('area-runs').waitFor();
      await page.getByTestId('nav-optimise').click();
      await expect.poll(() => new URL(page.url()).hash, { timeout: 10_000 }).toBe(`#/optimise?wizard=${id}`);

      // The workspace is used now (the Dashboard's Start here is gone): the built-in example is one click away here.
      await page.getByTestId('opt-use-example').click();
      expect(await page.getByTestId('opt-model').inputValue()).toBe('bottleneck_resnet');
      expect(await page.getByTestId('opt-data').inputValue()).toBe('example-board');
      expect(await page.getByTestId('opt-maxTrials').inputValue()).toBe('3');
      await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('opt-start');
      expect(errors).toEqual([]);
    } finally {
      cli.kill('SIGKILL');
      await page.close();
    }
  }, 240_000);
});
