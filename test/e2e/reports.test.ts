// Issue 13 in Chromium through serve mode: a report generated from a real benchmark run, one line
// edited, the preview showing the edit and the charts, the export folder written; and the
// benchmark's Download trace button giving a Chrome trace-event file.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { TraceFileSchema } from '../../src-main/api/reports';
import { benchmarkRun } from '../cli/report-fixture';
import { serveInChromium, SHOTS } from '../helpers/e2e';

let runId = '';
const fx = serveInChromium({
  timeoutMs: 120_000,
  async prepare(workspace) {
    runId = await benchmarkRun(workspace);
  },
});

const MY_LINE = 'Accepted: the MLP stays on the CPU rig, reviewed on the Reports page.';

describe('Reports area', () => {
  it('generates a report from a benchmark, previews an edit with its charts, and exports the folder', async () => {
    const context = await fx.browser.newContext({ viewport: { width: 1400, height: 1100 }, permissions: ['clipboard-read', 'clipboard-write'] });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    await page.goto(fx.serve.url);
    await page.getByTestId('nav-reports').click();
    await page.getByTestId('reports-empty').waitFor();

    await page.getByTestId('report-new').click();
    await page.getByTestId(`report-run-${runId}`).getByRole('checkbox').check();
    await page.getByTestId('report-title').fill('Where the MLP step goes');
    await page.screenshot({ path: path.join(SHOTS, 'reports-new.png') });
    await page.getByTestId('report-generate').click();
    await page.getByTestId('report-editor').waitFor({ timeout: 15_000 });
    const id = '0001-where-the-mlp-step-goes';
    await page.getByTestId(`report-${id}`).waitFor();

    // Every figure is shown, decoded by the browser from its data: URL under the page's CSP.
    const preview = page.getByTestId('report-preview');
    const folder = path.join(fx.workspace, 'reports', id);
    const svgs = readdirSync(folder).filter((n) => n.endsWith('.svg'));
    expect(svgs.length).toBeGreaterThanOrEqual(3);
    await expect
      .poll(() => preview.locator('img').evaluateAll((imgs) => imgs.filter((i) => (i as HTMLImageElement).complete && (i as HTMLImageElement).naturalWidth > 0).length), { timeout: 10_000 })
      .toBe(svgs.length);
    expect(await preview.locator('h1').innerText()).toBe('1. Where the MLP step goes');
    expect(await preview.innerText()).not.toContain('tb:begin');

    // One line edited outside the generated blocks: the preview follows as it is typed.
    const editor = page.getByTestId('report-markdown');
    const generated = await editor.inputValue();
    expect(generated).toContain('## Status\n\nProposed\n');
    await editor.fill(generated.replace('## Status\n\nProposed\n', `## Status\n\n${MY_LINE}\n`));
    await expect.poll(() => preview.innerText()).toContain(MY_LINE);
    expect(await page.getByTestId('report-state').innerText()).toBe('Unsaved edits');
    // While the draft is unsaved, leaving the page (a reload, a closed tab) is held for the browser to ask.
    const unloadHeld = () =>
      page.evaluate(() => {
        const e = new Event('beforeunload', { cancelable: true });
        window.dispatchEvent(e);
        return e.defaultPrevented;
      });
    expect(await unloadHeld()).toBe(true);
    await page.getByTestId('report-save').click();
    await expect.poll(() => page.getByTestId('report-state').innerText()).toBe('Saved');
    expect(await unloadHeld()).toBe(false);

    await page.getByTestId('report-copy').click();
    await expect.poll(() => page.getByTestId('report-state').innerText()).toBe('Copied the markdown to the clipboard');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toContain(MY_LINE);

    await page.getByTestId('report-export-dir').fill('exports/adr');
    await page.getByTestId('report-export').click();
    await page.getByTestId('report-exported').waitFor();
    const exported = path.join(fx.workspace, 'exports', 'adr');
    expect(readdirSync(exported).sort()).toEqual([`${id}.md`, ...svgs].sort());
    const markdown = readFileSync(path.join(exported, `${id}.md`), 'utf8');
    expect(markdown).toContain(`## Status\n\n${MY_LINE}\n`);
    // Each chart the markdown links is a file of the export, and each is an SVG document.
    const links = [...markdown.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]);
    expect(links.sort()).toEqual([...svgs].sort());
    for (const svg of svgs) expect(readFileSync(path.join(exported, svg), 'utf8')).toMatch(/^<\?xml[^>]*>\s*<svg /);

    // The edited line on the left, the first chart on the right.
    await editor.evaluate((el) => (el.scrollTop = 0));
    await preview.locator('img').first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'reports.png') });
    // A refused export says why, and the last export's "Exported to" is not left beside it.
    await page.getByTestId('report-export-dir').fill('/etc/evil');
    await page.getByTestId('report-export').click();
    await expect.poll(() => page.getByTestId('report-error').innerText()).toMatch(/\/etc\/evil.*outside the workspace/);
    expect(await page.getByTestId('report-exported').count()).toBe(0);

    // The open report has its own URL: a reload (or the link pasted) opens it again; Close drops it from the URL.
    await expect.poll(() => new URL(page.url()).hash).toBe(`#/reports?report=${id}`);
    await page.reload();
    await page.getByTestId('report-editor').waitFor({ timeout: 15_000 });
    expect(await page.getByTestId('report-markdown').inputValue()).toContain(MY_LINE);
    await page.getByTestId('report-close').click();
    await page.getByTestId('report-editor').waitFor({ state: 'detached' });
    expect(new URL(page.url()).hash).toBe('#/reports');
    // Opened from the list, it is named again; Back returns to the list with none open.
    await page.getByTestId(`report-${id}`).locator('td').first().click();
    await page.getByTestId('report-editor').waitFor({ timeout: 15_000 });
    await expect.poll(() => new URL(page.url()).hash).toBe(`#/reports?report=${id}`);
    await page.goBack();
    await page.getByTestId('report-editor').waitFor({ state: 'detached', timeout: 15_000 });
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it("downloads a benchmark's steps as a Chrome trace from the Benchmarks area", async () => {
    const page = await fx.browser.newPage();
    await page.goto(`${fx.serve.url}#/benchmarks`);
    const button = page.getByTestId(`trace-${runId}`);
    await button.waitFor();
    await page.getByTestId('benchmark-table').screenshot({ path: path.join(SHOTS, 'benchmarks-trace.png') });
    const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
    expect(download.suggestedFilename()).toBe(`trace-${runId}.json`);
    const trace = TraceFileSchema.parse(JSON.parse(readFileSync(await download.path(), 'utf8')));
    const slices = trace.traceEvents.filter((e) => e.ph === 'X');
    expect(slices.length).toBeGreaterThan(0);
    expect(new Set(slices.map((e) => e.name))).toContain('forward');
    // The same trace the service wrote beside the run.
    expect(JSON.parse(readFileSync(path.join(fx.workspace, 'runs', runId, 'trace.json'), 'utf8'))).toEqual(trace);
    expect(await page.locator(`[data-testid="trace-error-${runId}"]`).count()).toBe(0);
    await page.close();
  }, 30_000);
});
