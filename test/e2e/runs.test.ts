// The Runs area in Chromium: a run trained through the CLI is listed and charted.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import type { RunRecordJson } from '../../src-main/api/run-record';
import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import { serveInChromium, SHOTS } from '../helpers/e2e';
import { CLI } from '../helpers/repo';

const fx = serveInChromium({
  timeoutMs: 120_000,
  async prepare(workspace) {
    await promisify(execFile)(process.execPath, [CLI, 'train', '--model', 'mlp', '--max-steps', '60', '--json', '--workspace', workspace]);
    // A damaged run is listed with its problem, not dropped.
    mkdirSync(path.join(workspace, 'runs', '19990101-000000-broken'), { recursive: true });
    writeFileSync(path.join(workspace, 'runs', '19990101-000000-broken', 'run.json'), '{ not json');
    // A run whose owner on another host stopped beating long ago: interrupted, with its last step.
    const killed = path.join(workspace, 'runs', '19990102-000000-killed');
    mkdirSync(killed, { recursive: true });
    const record: RunRecordJson = {
      schemaVersion: RUN_SCHEMA_VERSION,
      id: '19990102-000000-killed',
      kind: 'train',
      status: 'running',
      createdAt: '1999-01-02T00:00:00.000Z',
      config: { spec: { family: 'cnn' }, cachedData: { description: 'fashion-mnist-train (60000 records)' } },
      owner: { pid: 4242, host: 'rig-elsewhere.invalid', startedAt: '1999-01-02T00:00:00.000Z' },
      heartbeatAt: '1999-01-02T00:05:00.000Z',
    };
    writeFileSync(path.join(killed, 'run.json'), JSON.stringify(record));
    const step = (i: number) => ({
      type: 'step', epoch: 1, epochs: 2, step: i, stepsPerEpoch: 938, globalStep: i, totalSteps: 1876, loss: 2 / i, accuracy: 0.5,
      lr: 0.01, gradNorm: 1, samplesPerSec: 900, phasesMs: { data: 0.1, h2d: 0, forward: 1, loss: 0.1, backward: 2, optimizer: 0.2 },
    });
    writeFileSync(path.join(killed, 'events.jsonl'), [1, 2, 1234].map((i) => JSON.stringify(step(i))).join('\n') + '\n{"type":"ste');
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
    // Named short in the list (issue 27 item 10): model on dataset, the record count in the run.
    expect(await rows.first().getByTestId('run-name').innerText()).toBe('mlp on fashion-mnist-train');
    expect(await page.getByTestId('run-19990101-000000-broken').innerText()).toMatch(/unreadable/);
    const killed = page.getByTestId('run-19990102-000000-killed');
    expect(await killed.getByTestId('run-status').innerText()).toMatch(
      /^interrupted\s+at step 1,234 of 1,876 \(epoch 1\/2\): no heartbeat from process 4242 on rig-elsewhere.invalid for \d+ days \(last 1999-01-02T00:05:00.000Z;/,
    );
    // Rows are reachable by keyboard: focus one and press Enter.
    await killed.focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('run-detail').getByText('interrupted').waitFor();
    expect(await killed.getAttribute('aria-selected')).toBe('true');
    expect(await page.getByTestId('run-detail').getByTestId('run-status').innerText()).toMatch(/^interrupted\s+at step 1,234 of 1,876/);
    await rows.first().click();
    await page.getByTestId('run-detail').getByText('completed').waitFor();
    await page.getByTestId('run-detail').waitFor();
    for (const chart of ['run-loss-chart', 'run-phase-chart', 'run-memory-chart']) {
      expect(await page.locator(`[data-testid="${chart}"] canvas`).count()).toBeGreaterThan(0);
    }
    expect(await page.getByTestId('run-backend').innerText()).toMatch(/^cpu · fp32 · steady clock/);
    // The run's result (one schema for both targets): what it trained, and what the held-out test set says.
    expect(await page.getByTestId('run-train-summary').innerText()).toMatch(/^60 optimizer steps · [\d,.]+ samples\/s over the whole run · step [\d.]+ ms after \d+ warm-up steps$/);
    expect(await page.getByTestId('run-test-result').innerText()).toMatch(/^Test accuracy \d+\.\d\d%, loss [\d.]+, on 10,000 held-out samples\.$/);
    // Charts are announced with their numbers.
    expect(await page.getByTestId('run-phase-chart').getAttribute('aria-label')).toMatch(/^Time per step by phase \(mean of every step, warm-up included, evaluation not\), [\d.,]+ ms in all$/);
    expect(await page.getByTestId('run-loss-chart').getAttribute('aria-label')).toMatch(/over \d+ steps; last loss [\d.]+$/);
    await page.screenshot({ path: path.join(SHOTS, 'runs.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
