// Issue 14: runs of the user's own command in the Runs area: a script benchmark and a script
// batch-size search show their own results (not "cannot be shown"), and the list gives their rates.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { CLI } from '../helpers/repo';
import { PYTHON, SCRIPTS } from '../script/script-helpers';

const run = promisify(execFile);
const rowsOf = (page: import('playwright-core').Page, kind: string) => page.locator(`tr[data-testid^="run-2"][data-kind="${kind}"]`);
const fx = serveInChromium({
  timeoutMs: 120_000,
  async prepare(workspace) {
    // --workspace before `--`: after it, the script would receive it.
    const cli = (cmd: string, flags: string[], script: string[]) => run(process.execPath, [CLI, cmd, ...flags, '--json', '--no-progress', '--workspace', workspace, '--cwd', SCRIPTS, '--', PYTHON, ...script]);
    await cli('benchmark-training', ['--warmup-steps', '1', '--steps', '8', '--repeat', '2'], [path.join(SCRIPTS, 'tiny_train.py')]);
    await cli('find-batch-size', ['--start-batch', '16', '--steps', '3', '--warmup-steps', '1', '--env', 'OOM_AT=20'], [path.join(SCRIPTS, 'oom_guard.py')]);
  },
});

describe('script runs in the Runs area', () => {
  it('shows a script benchmark and a script batch-size search with their own results', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1280, height: 1300 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${fx.serve.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    // The search's rate is its recommended batch's, not a dash.
    expect((await rowsOf(page, 'batch-search').locator('td').allInnerTexts())[5]).toMatch(/^[\d,]+$/);

    await rowsOf(page, 'benchmark').click();
    const bench = page.getByTestId('run-benchmark-result');
    await bench.waitFor();
    expect(await bench.innerText()).toMatch(/^[\d,]+ samples\/s \(50\.0% CI [\d,]+ to [\d,]+\) over 2 launches · steady-state step [\d.]+ ms · data wait [\d.]+ ?% · batch 16 · 1 rank\(s\) on cpu/);
    expect(await page.getByTestId('run-benchmark-chart').getAttribute('aria-label')).toMatch(/your command/);
    expect(await page.getByTestId('run-result-problem').count()).toBe(0);

    await rowsOf(page, 'batch-search').click();
    const search = page.getByTestId('run-batch-result');
    await search.waitFor();
    expect(await search.locator('p').first().innerText()).toMatch(/batch 19 is the largest that fits \(20: out of memory\)/);
    const rows = await search.locator('tbody tr').allInnerTexts();
    expect(rows.filter((r) => /\tout of memory\t/.test(r)).length).toBeGreaterThan(0);
    expect(await search.getByTestId('batch-size-chart').getAttribute('aria-label')).toMatch(/out of memory at batch .*20/);
    expect(await page.getByTestId('run-result-problem').count()).toBe(0);
    await page.screenshot({ path: path.join(SHOTS, 'run-script-batch-search.png'), fullPage: true });
    expect(errors).toEqual([]);
  });
});
