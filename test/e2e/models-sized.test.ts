// Issue 27 item 1: a CSV imported through the wizard trains in New run with the mlp sized to it, and the
// small spec editor saves a model of its own under models/ and selects it.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';

const fx = serveInChromium({
  timeoutMs: 120_000,
  prepare(workspace) {
    // 4 feature columns and a 3-class label: what the built-ins (784 inputs) could not train.
    const rows = ['a,b,c,d,label'];
    for (let i = 0; i < 120; i++) rows.push(`${(i % 7) / 7},${(i % 5) / 5},${(i % 3) / 3},${(i % 11) / 11},${i % 3}`);
    mkdirSync(path.join(workspace, 'sources'), { recursive: true });
    writeFileSync(path.join(workspace, 'sources', 'flowers.csv'), rows.join('\n') + '\n');
  },
});

describe('models sized to an imported dataset', () => {
  it('imports a CSV, trains the mlp sized to it from New run, then saves a narrower one with the editor and trains that', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1100 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(fx.serve.url);
    await page.getByTestId('nav-datasets').click();
    await page.getByTestId('file-flowers.csv').click();
    await expect.poll(() => page.getByTestId('csv-label').inputValue()).toBe('label');
    await page.getByTestId('inspect').click();
    await page.getByTestId('field-table').waitFor();
    await page.getByTestId('build').click();
    await expect.poll(() => page.getByTestId('build-result').innerText(), { timeout: 30_000 }).toMatch(/Built flowers-[0-9a-f]{12}, 120 records/);

    await page.getByTestId('nav-runs').click();
    await page.getByTestId('new-run').waitFor();
    const data = await page.locator('[data-testid="newrun-data"] option', { hasText: 'flowers' }).getAttribute('value');
    await page.getByTestId('newrun-data').selectOption(data!);
    // The built-in mlp (784 inputs) gives way to the mlp sized to the data; the cnn says why it does not fit.
    await expect.poll(() => page.getByTestId('newrun-model').inputValue()).toBe('sized:mlp');
    const sized = page.locator('[data-testid="newrun-model"] option[value="sized:mlp"]');
    expect(await sized.innerText()).toBe('mlp sized to flowers (input [4], 3 classes)');
    const cnn = page.locator('[data-testid="newrun-model"] option[value="sized:cnn"]');
    expect(await cnn.isDisabled()).toBe(true);
    expect(await cnn.getAttribute('title')).toMatch(/field 'x' has shape \[4\] per record, not an image/);
    await page.getByTestId('newrun-maxSteps').fill('10');
    await page.getByTestId('newrun-start').click();
    const detail = page.getByTestId('run-detail');
    await detail.getByText('completed').waitFor({ timeout: 60_000 });
    expect(await detail.getByTestId('run-config').innerText()).toMatch(/spec\.input\s+\[4\]/);
    await page.screenshot({ path: path.join(SHOTS, 'models-sized-run.png'), fullPage: true });

    // The editor: one hidden layer of 16, saved under models/ and chosen.
    await page.getByTestId('newrun-spec-editor').locator('summary').click();
    await page.getByTestId('newrun-spec-widths').fill('16');
    expect(await page.getByTestId('newrun-spec-summary').innerText()).toBe('mlp: input [4], 3 classes');
    await page.getByTestId('newrun-spec-name').fill('../escape');
    await page.getByTestId('newrun-spec-save').click();
    await expect.poll(() => page.getByTestId('newrun-spec-error').innerText()).toMatch(/^(?!E_).*name/);
    await page.getByTestId('newrun-spec-name').fill('narrow-flowers');
    await page.getByTestId('newrun-spec-save').click();
    await expect.poll(() => page.getByTestId('newrun-model').inputValue()).toBe('models/narrow-flowers.json');
    expect(JSON.parse(readFileSync(path.join(fx.workspace, 'models', 'narrow-flowers.json'), 'utf8'))).toMatchObject({ family: 'mlp', input: [4], outputs: 3, hidden: [16] });
    await page.screenshot({ path: path.join(SHOTS, 'models-sized-editor.png'), fullPage: true });
    // At 1024 px the open editor wraps: nothing runs off to the side.
    await page.setViewportSize({ width: 1024, height: 700 });
    await page.getByTestId('newrun-spec-editor').scrollIntoViewIfNeeded();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
    await page.screenshot({ path: path.join(SHOTS, 'models-sized-editor-1024.png') });
    await page.getByTestId('newrun-maxSteps').fill('10');
    await page.getByTestId('newrun-start').click();
    await expect.poll(() => page.locator('[data-testid^="run-2"]').count(), { timeout: 60_000 }).toBe(2);
    // Ten steps of this mlp end within a moment: the detail turns from the first run to the new one, then says it completed.
    await expect.poll(() => detail.getByTestId('run-config').innerText(), { timeout: 60_000 }).toMatch(/spec\.hidden\s+\[16\]/);
    await detail.getByText('completed').waitFor({ timeout: 60_000 });
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('benchmarks and searches the batch size of the mlp sized to the imported dataset', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/benchmarks`);
    await page.getByTestId('benchmark-data').locator('option', { hasText: 'flowers' }).waitFor({ state: 'attached' });
    const data = await page.getByTestId('benchmark-data').locator('option', { hasText: 'flowers' }).getAttribute('value');
    await page.getByTestId('benchmark-data').selectOption(data!);
    await expect.poll(() => page.getByTestId('benchmark-model').inputValue()).toBe('sized:mlp');
    await page.getByTestId('benchmark-batchSize').fill('16');
    await page.getByTestId('benchmark-warmupSteps').fill('1');
    await page.getByTestId('benchmark-steps').fill('5');
    await page.getByTestId('benchmark-repeat').fill('1');
    await page.getByTestId('benchmark-start').click();
    await expect.poll(() => page.locator('[data-testid^="benchmark-2"]').count(), { timeout: 60_000 }).toBe(1);
    expect(await page.getByTestId('benchmark-error').count()).toBe(0);
    expect(await page.locator('[data-testid^="benchmark-2"]').innerText()).toContain('mlp');

    await page.goto(`${fx.serve.url}#/batch-size`);
    await page.getByTestId('bs-data').locator('option', { hasText: 'flowers' }).waitFor({ state: 'attached' });
    await page.getByTestId('bs-data').selectOption(data!);
    await expect.poll(() => page.getByTestId('bs-model').inputValue()).toBe('sized:mlp');
    await page.getByTestId('bs-memory-limit').fill('16');
    await page.getByTestId('bs-steps').fill('2');
    await page.getByTestId('bs-start').click();
    await page.getByTestId('bs-verdict').waitFor({ timeout: 90_000 });
    expect(await page.getByTestId('bs-trials').locator('tbody tr').count()).toBeGreaterThan(0);
    await page.screenshot({ path: path.join(SHOTS, 'models-sized-batch-size.png'), fullPage: true });

    // Apply carries the sized model: New run opens with it, on the same data, with the batch found.
    expect(await page.getByTestId('bs-apply-what').innerText()).toMatch(/^batch [\d,]+ for mlp sized to the data on dataset flowers, /);
    const batch = (/^batch ([\d,]+)/.exec(await page.getByTestId('bs-apply-what').innerText()) ?? [])[1]?.replace(/,/g, '');
    await page.getByTestId('bs-apply-newrun').click();
    await page.getByTestId('new-run').waitFor();
    // The selects show the values once their options (datasets, models) have loaded.
    await expect.poll(() => page.getByTestId('newrun-model').inputValue()).toBe('sized:mlp');
    await expect.poll(() => page.getByTestId('newrun-data').inputValue()).toBe(data);
    expect(await page.getByTestId('newrun-batchSize').inputValue()).toBe(batch);
    expect(await page.getByTestId('newrun-applied-note').count()).toBe(0);

    // A spec file of the workspace (saved by the editor above) is carried by its path, here into Optimise's form.
    await page.goto(`${fx.serve.url}#/batch-size`);
    await page.getByTestId('bs-data').locator('option', { hasText: 'flowers' }).waitFor({ state: 'attached' });
    await page.getByTestId('bs-data').selectOption(data!);
    await page.getByTestId('bs-model').selectOption('models/narrow-flowers.json');
    await page.getByTestId('bs-start').click();
    await expect.poll(() => page.getByTestId('bs-apply-what').innerText(), { timeout: 90_000 }).toMatch(/ for models\/narrow-flowers\.json on dataset flowers, /);
    await page.getByTestId('bs-apply-optimise').click();
    await page.getByTestId('opt-applied').waitFor();
    await expect.poll(() => page.getByTestId('opt-model').inputValue()).toBe('models/narrow-flowers.json');
    await expect.poll(() => page.getByTestId('opt-data').inputValue()).toBe(data);
    expect(errors).toEqual([]);
    await page.close();
  }, 150_000);

  it('optimises the mlp sized to the imported dataset, sending its sized spec', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const sent: string[] = [];
    page.on('websocket', (ws) => ws.on('framesent', (f) => sent.push(String(f.payload))));
    await page.goto(`${fx.serve.url}#/optimise`);
    await page.getByTestId('opt-data').locator('option', { hasText: 'flowers' }).waitFor({ state: 'attached' });
    const data = await page.getByTestId('opt-data').locator('option', { hasText: 'flowers' }).getAttribute('value');
    await page.getByTestId('opt-data').selectOption(data!);
    await expect.poll(() => page.getByTestId('opt-model').inputValue()).toBe('sized:mlp');
    await page.getByTestId('opt-batchSize').fill('16');
    await page.getByTestId('opt-repeat').fill('2');
    await page.getByTestId('opt-maxTrials').fill('1');
    await page.getByTestId('opt-steps').fill('5');
    await page.getByTestId('opt-warmupSteps').fill('1');
    await page.getByTestId('opt-batchSearch').uncheck();
    await page.getByTestId('opt-start').click();
    await page.getByTestId('opt-final').waitFor({ timeout: 90_000 });
    const start = sent.find((f) => f.includes('"optimise.start"'));
    expect(start).toMatch(/"spec":\{"family":"mlp","task":"classification","input":\[4\],"outputs":3/);
    await page.screenshot({ path: path.join(SHOTS, 'models-sized-optimise.png'), fullPage: true });

    // Apply opens New run with the sized model, and the run it starts trains on it.
    expect(await page.getByTestId('opt-apply').isEnabled()).toBe(true);
    await page.getByTestId('opt-apply').click();
    await page.getByTestId('new-run').waitFor();
    await expect.poll(() => page.getByTestId('newrun-model').inputValue()).toBe('sized:mlp');
    expect(await page.getByTestId('newrun-batchSize').inputValue()).toBe('16');
    await page.getByTestId('newrun-maxSteps').fill('5');
    await page.getByTestId('newrun-start').click();
    const detail = page.getByTestId('run-detail');
    await expect.poll(() => detail.getByTestId('run-status').innerText().catch(() => 'no run is open'), { timeout: 60_000 }).toMatch(/^completed/);
    expect(await detail.getByTestId('run-config').innerText()).toMatch(/spec\.input\s+\[4\]/);
    expect(errors).toEqual([]);
    await page.close();
  }, 150_000);
});
