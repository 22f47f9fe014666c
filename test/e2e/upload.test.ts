// Data in without a shell (issue 41 item 1), in a real browser against `trainbench serve`: a CSV uploaded
// through the Datasets page's file picker at 1440 and 1024 px, its progress seen to the end, then chosen
// in the wizard and imported; a dropped file; Cancel mid-upload leaves no file. Screenshots go to
// /tmp/upload-shots/ (and test-results/screenshots/).
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { tempDir } from '../helpers/temp-dir';

const OUT = '/tmp/upload-shots';
const files = tempDir();
const SPECIES = ['setosa', 'versicolor', 'virginica'];

/** A CSV of `rows` flowers, as a person would have it on their own machine (not in the workspace). */
function flowersCsv(name: string, rows: number): string {
  const lines = ['sepal_length,sepal_width,petal_length,petal_width,species'];
  for (let i = 0; i < rows; i++) lines.push(`${(4.3 + (i % 36) / 10).toFixed(1)},${(2 + (i % 24) / 10).toFixed(1)},${(1 + (i % 59) / 10).toFixed(1)},${((i % 25) / 10).toFixed(1)},${SPECIES[i % 3]}`);
  const file = path.join(files.dir, name);
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

const fx = serveInChromium();
const sources = () => readdirSync(path.join(fx.workspace, 'sources')).sort();

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
  copyFileSync(path.join(OUT, `${name}.png`), path.join(SHOTS, `upload-${name}.png`));
}

/** Uploads go at `bytesPerSecond`, so the bar is seen moving and Cancel has something to stop. */
async function slowUploads(page: Page, bytesPerSecond: number): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: bytesPerSecond });
}

async function openDatasets(width: number): Promise<{ page: Page; errors: string[] }> {
  const page = await fx.browser.newPage({ viewport: { width, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(fx.serve.url);
  try {
    await page.getByTestId('nav-datasets').click();
  } catch (err) {
    // What the page showed instead, for the one reading the failure.
    await shot(page, `no-nav-${width}`);
    throw err;
  }
  await page.getByTestId('source-upload').waitFor();
  return { page, errors };
}

describe('uploading data files on the Datasets page (serve mode, Chromium)', () => {
  for (const width of [1440, 1024]) {
    it(`uploads a CSV through the file picker at ${width} px, shows its progress, and imports it`, async () => {
      const name = `flowers-${width}.csv`;
      const csv = flowersCsv(name, 60_000);
      const { page, errors } = await openDatasets(width);
      // The real folder, where a person could also copy files.
      await expect.poll(() => page.getByTestId('sources-folder').innerText()).toBe(path.join(fx.workspace, 'sources'));
      await shot(page, `before-${width}`);

      await slowUploads(page, 600 * 1024);
      const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByTestId('upload-choose').click()]);
      await chooser.setFiles(csv);
      const bar = page.getByTestId('upload-progress').getByRole('progressbar');
      await expect.poll(async () => Number(await bar.getAttribute('aria-valuenow')), { timeout: 20_000 }).toBeGreaterThan(10);
      expect(await page.getByTestId('upload-file').innerText()).toBe(name);
      expect(await page.getByTestId('upload-bytes').innerText()).toMatch(/^[\d.]+ (kB|MB) \/ [\d.]+ MB$/);
      // While it is being sent, its name is not in sources/: only a hidden temp file is.
      expect(sources()).not.toContain(name);
      await shot(page, `progress-${width}`);

      await page.getByTestId('upload-done').waitFor({ timeout: 30_000 });
      expect(await page.getByTestId('upload-done').innerText()).toMatch(new RegExp(`^Added sources/${name.replace('.', '\\.')} \\([\\d.]+ MB\\)\\.$`));
      expect(readFileSync(path.join(fx.workspace, 'sources', name))).toEqual(readFileSync(csv));
      expect(sources().filter((n) => n.startsWith('.'))).toEqual([]);

      // The new file is listed and chosen at once: a CSV with its header read, the label column offered.
      await page.getByTestId(`file-${name}`).waitFor();
      expect(await page.getByTestId('source-kind').inputValue()).toBe('csv');
      expect(await page.getByTestId('chosen-files').innerText()).toContain(`sources/${name}`);
      await expect.poll(() => page.getByTestId('csv-label').inputValue()).toBe('species');
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
      await shot(page, `uploaded-${width}`);

      await page.getByTestId('inspect').click();
      await page.getByTestId('field-table').waitFor();
      expect(await page.getByTestId('dataset-name').inputValue()).toBe(`flowers-${width}`);
      await page.getByTestId('build').click();
      await page.getByTestId('build-result').waitFor({ timeout: 30_000 });
      expect(await page.getByTestId('build-result').innerText()).toMatch(new RegExp(`^Built flowers-${width}-[0-9a-f]{12}, 60,000 records`));
      await page.getByTestId(`dataset-flowers-${width}`).waitFor();
      await shot(page, `imported-${width}`);
      expect(errors).toEqual([]);
      await page.close();
    }, 120_000);
  }

  it('takes a file dropped on the upload area, and Cancel mid-upload leaves no file', async () => {
    const { page, errors } = await openDatasets(1280);
    const dropped = await page.evaluateHandle(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(['a,b,label\n1,2,x\n3,4,y\n'], 'dropped.csv', { type: 'text/csv' }));
      return transfer;
    });
    await page.getByTestId('source-upload').dispatchEvent('drop', { dataTransfer: dropped });
    await page.getByTestId('upload-done').waitFor({ timeout: 20_000 });
    expect(readFileSync(path.join(fx.workspace, 'sources', 'dropped.csv'), 'utf8')).toBe('a,b,label\n1,2,x\n3,4,y\n');

    await slowUploads(page, 200 * 1024);
    const big = flowersCsv('cancelled.csv', 200_000);
    await page.getByTestId('upload-input').setInputFiles(big);
    const bar = page.getByTestId('upload-progress').getByRole('progressbar');
    await expect.poll(async () => Number(await bar.getAttribute('aria-valuenow')), { timeout: 20_000 }).toBeGreaterThan(5);
    // The bytes so far are on the server, in a hidden temp file.
    await expect.poll(() => sources().filter((n) => n.startsWith('.cancelled.csv.')).length, { timeout: 10_000 }).toBe(1);
    await shot(page, 'cancel-before');
    await page.getByTestId('upload-cancel').click();
    await expect.poll(() => page.getByTestId('upload-cancelled').innerText()).toBe('cancelled: cancelled.csv was not added.');
    expect(await page.getByTestId('upload-error').count()).toBe(0);
    await expect.poll(() => sources().filter((n) => n.includes('cancelled')), { timeout: 10_000 }).toEqual([]);
    expect(existsSync(path.join(fx.workspace, 'sources', 'cancelled.csv'))).toBe(false);
    await shot(page, 'cancelled');

    // A name already there is refused with the server's words; what is there is kept.
    await slowUploads(page, -1);
    await page.getByTestId('upload-input').setInputFiles({ name: 'dropped.csv', mimeType: 'text/csv', buffer: Buffer.from('other\n') });
    await expect.poll(() => page.getByTestId('upload-error').innerText()).toBe('sources/dropped.csv exists already: rename the file you add, or remove the one in sources/ first');
    expect(readFileSync(path.join(fx.workspace, 'sources', 'dropped.csv'), 'utf8')).toBe('a,b,label\n1,2,x\n3,4,y\n');
    await shot(page, 'name-taken');
    // The browser logs the refused request itself; nothing else went wrong on the page.
    expect(errors.filter((e) => !/status of 409/.test(e))).toEqual([]);
    await page.close();
  }, 90_000);
});
