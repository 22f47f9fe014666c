// Issue 11, section 1: Compare overlays the curves of runs picked in the Runs area (by step, time
// or samples, with smoothing) beside a table of the settings that differ; a run's page shows its
// whole config, its recorded telemetry, and a loader benchmark shows its table and chart.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import { serveInChromium, SHOTS } from '../helpers/e2e';
import { CLI } from '../helpers/repo';

const run = promisify(execFile);
/** A run from a rig with two GPUs, written by hand (listed after the CLI's runs: its id sorts first). */
const GPU_RUN = '19990301-000000-gpus';
/** Rows by the run's kind (benchmarks and searches name the model in their titles too). */
const rowsOf = (page: import('playwright-core').Page, kind: string) => page.locator(`tr[data-testid^="run-2"][data-kind="${kind}"]`);
const fx = serveInChromium({
  timeoutMs: 180_000,
  async prepare(workspace) {
    const train = (...args: string[]) => run(process.execPath, [CLI, 'train', '--model', 'mlp', '--json', '--workspace', workspace, ...args]);
    await train('--max-steps', '40', '--lr', '0.002');
    await train('--max-steps', '60', '--lr', '0.0005', '--batch-size', '128');
    // Three repetitions each: the fewest whose speed verdict decides (their interval covers 90%).
    await run(process.execPath, [CLI, 'benchmark-training', '--model', 'mlp', '--steps', '10', '--warmup-steps', '2', '--repeat', '3', '--json', '--workspace', workspace]);
    // A second benchmark of the same model at another batch, for Compare's speed verdict.
    await run(process.execPath, [CLI, 'benchmark-training', '--model', 'mlp', '--batch-size', '256', '--steps', '10', '--warmup-steps', '2', '--repeat', '3', '--json', '--workspace', workspace]);
    await run(process.execPath, [CLI, 'find-batch-size', '--model', 'mlp', '--data', 'fashion-mnist', '--memory-limit', '20000000', '--json', '--workspace', workspace]);
    // A run recorded on a rig with two GPUs (this machine has none): its telemetry, with a pause in sampling.
    const rig = path.join(workspace, 'runs', GPU_RUN);
    mkdirSync(rig, { recursive: true });
    writeFileSync(path.join(rig, 'run.json'), JSON.stringify({
      schemaVersion: RUN_SCHEMA_VERSION, id: GPU_RUN, kind: 'train', status: 'completed', createdAt: '1999-03-01T00:00:00.000Z', finishedAt: '1999-03-01T00:01:00.000Z',
      config: { spec: { family: 'bottleneck_resnet' }, cachedData: { description: 'example-board-train (20000 records)' }, options: { device: 'cuda:0' } },
    }));
    const gpu = (index: number, util: number) => ({
      index, uuid: null, name: 'NVIDIA H100', utilizationGpu: util, utilizationMemory: 30, memoryUsedMiB: 20_000 + index, memoryTotalMiB: 81_559, temperatureC: 60,
      powerDrawW: 350, powerLimitW: 700, clockSmMHz: 1980, clockMemMHz: 2619, pcieGen: 5, pcieWidth: 16, throttleReasons: null,
    });
    const host = { cpuPerCore: [40, 60], memUsedBytes: 1, memAvailableBytes: 1, memTotalBytes: 2, swapUsedBytes: 0, swapTotalBytes: 0, diskReadBytesPerSec: null, diskWriteBytesPerSec: null, engineHost: null };
    const t0 = Date.parse('1999-03-01T00:00:00.000Z');
    const times = [0, 500, 1000, 1500, 9000, 9500, 10_000]; // sampling paused for 7.5 s
    writeFileSync(path.join(rig, 'telemetry.jsonl'), times.map((dt) => JSON.stringify({ t: t0 + dt, gpus: [gpu(0, 90), gpu(1, 70)], host })).join('\n') + '\n');
    await run(process.execPath, [CLI, 'benchmark-dataloader', '--dataset', 'fashion-mnist-train', '--workers', '0,1', '--seconds', '0.3', '--no-uncached', '--json', '--workspace', workspace]);
  },
});


describe('Compare and run pages', () => {
  it('overlays two runs by step, samples and time, with smoothing, and names the settings that differ', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1400 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    const trainRows = rowsOf(page, 'train');
    expect(await trainRows.count()).toBe(2);
    expect(await page.getByTestId('compare-start').isDisabled()).toBe(true);
    for (const row of await trainRows.all()) await row.locator('input[type="checkbox"]').check();
    await page.getByTestId('compare-start').click();
    await page.getByTestId('compare').waitFor();

    const diff = page.getByTestId('compare-differences');
    const text = await diff.innerText();
    expect(text).toMatch(/options\.batchSize\s+128\s+64/);
    expect(text).toMatch(/options\.maxSteps\s+60\s+40/);
    expect(text).toMatch(/options\.optimizer\.lr\s+0\.0005\s+0\.002/);
    expect(text).not.toMatch(/options\.seed/); // the same in both: not a difference

    const loss = page.getByTestId('compare-loss-chart');
    expect(await loss.getAttribute('aria-label')).toMatch(/^Training loss by step, smoothed 0.6; last values: mlp · \w{6} [\d.]+, mlp · \w{6} [\d.]+$/);
    await page.getByTestId('compare-axis').selectOption('samples');
    expect(await loss.getAttribute('aria-label')).toMatch(/^Training loss by samples seen/);
    await page.getByTestId('compare-axis').selectOption('time');
    expect(await loss.getAttribute('aria-label')).toMatch(/^Training loss by time \(s\)/);
    expect(await page.getByTestId('compare-missing').count()).toBe(0); // both runs' events carry their time
    await page.getByTestId('compare-smoothing').fill('0');
    expect(await loss.getAttribute('aria-label')).toMatch(/^Training loss by time \(s\); last values/);
    await page.screenshot({ path: path.join(SHOTS, 'compare.png'), fullPage: true });
    // The comparison is in the URL: a reload (or the link pasted elsewhere) shows the same runs compared.
    await expect.poll(() => new URL(page.url()).hash).toMatch(/^#\/runs\?compare=[^,&]+,[^,&]+$/);
    await page.reload();
    await page.getByTestId('compare').waitFor();
    expect(await page.getByTestId('compare-differences').innerText()).toMatch(/options\.batchSize\s+128\s+64/);
    // Unticking a run while comparing: fewer than two left closes the comparison, and the URL says so.
    await trainRows.first().locator('input[type="checkbox"]').uncheck();
    await expect.poll(() => page.getByTestId('compare').count()).toBe(0);
    await expect.poll(() => new URL(page.url()).hash).toBe('#/runs');
    expect(errors).toEqual([]);
  });

  it('compares runs of four kinds at 1024 px without the tables running out of the window', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1024, height: 800 } });
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    for (const kind of ['train', 'benchmark', 'batch-search', 'loader-benchmark']) await rowsOf(page, kind).first().locator('input[type="checkbox"]').check();
    await page.getByTestId('compare-start').click();
    await page.getByTestId('compare-differences').waitFor();
    // No best samples/s among runs of different kinds (a search's one trial is no benchmark median).
    expect(await page.locator('[data-testid="compare-results"] td[data-best]').evaluateAll((cells) => cells.map((c) => c.textContent ?? ''))).not.toContainEqual(expect.stringMatching(/samples/));
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    for (const card of [page.locator('main'), page.getByTestId('compare')]) expect(await card.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
    await page.screenshot({ path: path.join(SHOTS, 'compare-four-kinds-1024.png'), fullPage: true });
    await page.close();
  });

  it('shows a training run with its whole config, train and test per epoch, and its telemetry', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1600 } });
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    await rowsOf(page, 'train').first().click();
    const config = page.getByTestId('run-config');
    await config.waitFor();
    const configText = await config.innerText();
    expect(configText).toMatch(/spec\.family\s+mlp/);
    expect(configText).toMatch(/options\.optimizer\.kind\s+adamw/);
    expect(configText).toMatch(/data\.kind\s+fashion-mnist/);
    // One evaluated epoch: train and test side by side.
    expect(await page.getByTestId('run-epoch-loss-chart').getAttribute('aria-label')).toMatch(/^Loss per epoch, train and test over 1 epoch: last train [\d.]+, test [\d.]+$/);
    expect(await page.getByTestId('run-phase-chart').getAttribute('aria-label')).toMatch(/^Time per step by phase \(mean of every step, warm-up included, evaluation not\), [\d.]+ ms in all$/);
    // On this CPU-only machine: the host CPU chart, and a plain line saying why there are no GPU charts; a run shorter
    // than the sampling interval has one sample, which is said in words instead of drawn as empty axes.
    const id = new URL(page.url()).hash.match(/run=([^&]+)/)![1];
    const samples = readFileSync(path.join(fx.workspace, 'runs', id, 'telemetry.jsonl'), 'utf8').trim().split('\n').length;
    if (samples > 1) {
      expect(await page.getByTestId('run-telemetry-host-cpu').getAttribute('aria-label')).toMatch(/^Host CPU load over the run, all cores: mean [\d.]+ %$/);
      expect(await page.getByTestId('run-telemetry-missing').innerText()).toMatch(/No GPU was sampled during this run/);
    } else {
      expect(await page.getByTestId('run-telemetry-missing').innerText()).toMatch(/One telemetry sample was recorded \(the run was shorter than the sampling interval\): too few to chart over time/);
      expect(await page.getByTestId('run-telemetry-host-cpu').count()).toBe(0);
    }
    await page.screenshot({ path: path.join(SHOTS, 'run-detail.png'), fullPage: true });
  });

  it('shows a loader benchmark with its table and chart, and its best rate in the list', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1200 } });
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    const row = rowsOf(page, 'loader-benchmark');
    const cells = await row.locator('td').allInnerTexts();
    expect(cells[5]).toMatch(/^[\d,]+$/); // samples/s: the best cached setting, not a dash
    await row.click();
    const result = page.getByTestId('run-loader-result');
    await result.waitFor();
    const rows = await result.locator('tbody tr').allInnerTexts();
    expect(rows.map((r) => r.split('\t').slice(0, 2))).toEqual([['cached', '0'], ['cached', '1']]);
    expect(await page.getByTestId('run-loader-chart').getAttribute('aria-label')).toMatch(/^Loader throughput chart\. cached: 0 workers [\d,]+ samples\/s, 1 workers [\d,]+ samples\/s$/);
    expect(await page.getByTestId('run-result-problem').count()).toBe(0);
  });

  it('shows a training benchmark and a batch-size search with their own results', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1400 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    await rowsOf(page, 'benchmark').first().click();
    const bench = page.getByTestId('run-benchmark-result');
    await bench.waitFor();
    expect(await bench.innerText()).toMatch(/^[\d,]+ samples\/s · steady-state step [\d.]+ ms · wall-clock mean [\d.]+ ms · predicted epoch [\d.,]+ s \(steady\) \/\s*[\d.,]+ s \(wall clock\)/);
    expect(await page.getByTestId('run-benchmark-chart').getAttribute('aria-label')).toBeTruthy();

    await rowsOf(page, 'batch-search').click();
    const search = page.getByTestId('run-batch-result');
    await search.waitFor();
    const rows = await search.locator('tbody tr').allInnerTexts();
    expect(rows.length).toBeGreaterThan(1);
    expect(rows.some((r) => /\tout of memory\t/.test(r))).toBe(true); // the 20 MB limit stops the search: an OOM is a data point
    // The Batch size page's columns (UI round 4: here a CPU search showed the prediction again as its "peak"): what
    // the OS measured of the engine process, beside the prediction.
    const heads = await search.locator('thead th').allInnerTexts();
    expect(heads).toContain('predicted MiB');
    expect(heads).toContain('process peak MiB');
    expect(heads).not.toContain('measured MiB');
    expect(await search.getByTestId('batch-size-chart').getAttribute('aria-label')).toMatch(/batch/);
    expect(await search.locator('p').first().innerText()).toMatch(/batch/);
    await page.screenshot({ path: path.join(SHOTS, 'run-batch-search.png'), fullPage: true });
    expect(await page.getByTestId('run-result-problem').count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it("judges the second of two benchmarks against the first by the regression gate's rule, at the tolerance chosen", async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1400 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    const benchmarks = rowsOf(page, 'benchmark');
    expect(await benchmarks.count()).toBe(2);
    for (const row of await benchmarks.all()) await row.locator('input[type="checkbox"]').check();
    await page.getByTestId('compare-start').click();
    const verdict = page.getByTestId('compare-speed-verdict');
    await verdict.waitFor();
    expect(await verdict.getAttribute('data-outcome')).toMatch(/^(faster|same|slower|undecided)$/);
    // Three repetitions a side: the interval, or the reason there is none, as trainbench check words it.
    expect(await verdict.innerText()).toMatch(/^mlp · [0-9a-f]{6}: (faster|the same|slower|cannot tell) — (faster by|same within|slower by|could not decide)/);
    await page.getByTestId('compare-speed-tolerance').selectOption('0.2');
    // Judged again at ±20%: the tolerance is in the words, unless the faster verdict needs none, or the two runs saw
    // different conditions (a busy machine during one of them), where no tolerance decides.
    await page.waitForFunction(() => {
      const v = document.querySelector('[data-testid="compare-speed-verdict"]');
      return v?.textContent?.includes('20.0%') || v?.getAttribute('data-outcome') === 'faster' || v?.textContent?.includes('measured under other conditions');
    });
    await page.getByTestId('compare-speed').screenshot({ path: path.join(SHOTS, 'compare-speed.png') });
    expect(errors).toEqual([]);
  });

  it('charts the GPU telemetry a run recorded on its own timeline, one colour per GPU', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1600 } });
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId(`run-${GPU_RUN}`).click();
    const util = page.getByTestId('run-telemetry-gpu-utilization');
    await util.waitFor();
    expect(await util.getAttribute('aria-label')).toBe('GPU utilisation over the run: GPU 0 mean 90 %, GPU 1 mean 70 %');
    expect(await page.getByTestId('run-telemetry-gpu-memory').getAttribute('aria-label')).toBe('GPU memory used over the run: GPU 0 mean 20,000 MiB, GPU 1 mean 20,001 MiB');
    expect(await page.getByTestId('run-telemetry-gpu-power').count()).toBe(1);
    expect(await page.getByTestId('run-telemetry-missing').count()).toBe(0);
    await page.getByTestId('run-telemetry').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'run-gpu-telemetry.png'), fullPage: true });
  });
});
