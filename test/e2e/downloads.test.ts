// Issue 27 item 12 in Chromium through serve mode: Reports' "Download (zip)" and a run's
// "Download files (zip)" hand the browser a zip it saves itself; both are unpacked and compared
// with the workspace's files byte for byte.
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync, truncateSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import type { ReportDetail } from '../../src-main/api/reports';
import { benchmarkRun, cli } from '../cli/report-fixture';
import { serveInChromium, SHOTS } from '../helpers/e2e';

let runId = '';
let reportId = '';
const fx = serveInChromium({
  timeoutMs: 120_000,
  async prepare(workspace) {
    runId = await benchmarkRun(workspace);
    const out = await cli(workspace, ['report', runId, '--title', 'Where the MLP step goes', '--json']);
    reportId = (JSON.parse(out) as ReportDetail).summary.id;
  },
});

const PY_READ = `
import json, sys, zipfile, base64
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
print(json.dumps({i.filename: base64.b64encode(z.read(i)).decode() for i in z.infolist()}))
`;

/** A downloaded zip's entries, after `unzip -t` found no error. */
function unzip(file: string): Map<string, Buffer> {
  expect(execFileSync('unzip', ['-t', file], { encoding: 'utf8' })).toContain('No errors detected');
  const raw = JSON.parse(execFileSync('python3', ['-c', PY_READ, file], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })) as Record<string, string>;
  return new Map(Object.entries(raw).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
}

describe('downloads in serve mode', () => {
  it('downloads a report as a zip of its markdown and charts, and a run as a zip of its files', async () => {
    const context = await fx.browser.newContext({ viewport: { width: 1400, height: 1000 }, acceptDownloads: true });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });

    await page.goto(fx.serve.url);
    await page.getByTestId('nav-reports').click();
    await page.getByTestId(`report-${reportId}`).click();
    await page.getByTestId('report-editor').waitFor();
    const [reportDownload] = await Promise.all([page.waitForEvent('download'), page.getByTestId('report-download').click()]);
    expect(reportDownload.suggestedFilename()).toBe(`${reportId}.zip`);
    await page.getByTestId('report-download-started').waitFor();
    expect(await page.getByTestId('report-download-started').innerText()).toMatch(new RegExp(`^${reportId}\\.zip: \\d+ files, \\d+(\\.\\d+)? kB before compression$`));
    await page.getByTestId('report-download').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'downloads-report.png') });

    const folder = path.join(fx.workspace, 'reports', reportId);
    const expected = readdirSync(folder).filter((n) => n.endsWith('.svg') || n === `${reportId}.md`);
    expect(expected.filter((n) => n.endsWith('.svg')).length).toBeGreaterThanOrEqual(3);
    const report = unzip((await reportDownload.path())!);
    expect([...report.keys()].sort()).toEqual(expected.map((n) => `${reportId}/${n}`).sort());
    for (const name of expected) expect(report.get(`${reportId}/${name}`)!.equals(readFileSync(path.join(folder, name))), name).toBe(true);
    // The markdown's chart links resolve inside the zip's folder.
    const links = [...report.get(`${reportId}/${reportId}.md`)!.toString('utf8').matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => `${reportId}/${m[1]}`);
    for (const link of links) expect(report.has(link), link).toBe(true);

    // A run's page, opened from its link.
    await page.goto(`${new URL(fx.serve.url).origin}/#/runs?run=${runId}`);
    await page.getByTestId('run-detail').waitFor();
    const [runDownload] = await Promise.all([page.waitForEvent('download'), page.getByTestId('run-download').click()]);
    expect(runDownload.suggestedFilename()).toBe(`run-${runId}.zip`);
    await page.getByTestId('run-download-started').waitFor();
    await page.screenshot({ path: path.join(SHOTS, 'downloads-run.png') });
    const runFolder = path.join(fx.workspace, 'runs', runId);
    const runFiles = readdirSync(runFolder);
    expect(runFiles).toContain('run.json');
    expect(runFiles).toContain('events.jsonl');
    const run = unzip((await runDownload.path())!);
    expect([...run.keys()].sort()).toEqual(runFiles.map((n) => `${runId}/${n}`).sort());
    for (const name of runFiles) expect(run.get(`${runId}/${name}`)!.equals(readFileSync(path.join(runFolder, name))), name).toBe(true);

    // The token went over the WebSocket only; no download's URL carried it.
    const token = new URL(fx.serve.url).searchParams.get('token')!;
    for (const d of [reportDownload, runDownload]) {
      expect(d.url()).toMatch(/\/download\/ticket\/[\w-]{32}$/);
      expect(d.url()).not.toContain(token);
    }
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it('says what a zip left out (a planted link, a FIFO) and why an oversize file stops the download', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1024, height: 700 } });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    const runFolder = path.join(fx.workspace, 'runs', runId);
    symlinkSync('/etc/passwd', path.join(runFolder, 'passwd.log'));
    execFileSync('mkfifo', [path.join(runFolder, 'stuck.jsonl')]);
    await page.goto(`${fx.serve.url}#/runs?run=${runId}`);
    await page.getByTestId('run-detail').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('run-download').click()]);
    const skipped = page.getByTestId('run-download-skipped');
    await skipped.waitFor();
    expect(await skipped.locator('li').allInnerTexts()).toEqual([
      `left out ${runId}/passwd.log: a link (not followed)`,
      `left out ${runId}/stuck.jsonl: a special file (FIFO, socket or device)`,
    ]);
    await page.getByTestId('run-download').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'downloads-run-skipped-1024.png') });
    const zip = unzip((await download.path())!);
    expect(zip.get(`${runId}/SKIPPED.txt`)!.toString()).toContain(`${runId}/stuck.jsonl: a special file (FIFO, socket or device)`);
    expect(zip.has(`${runId}/passwd.log`)).toBe(false);
    // Nothing is wider than the window at 1024 px.
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);

    // A sparse 600 MiB file: refused before any download starts, the file named.
    const big = path.join(runFolder, 'checkpoint.safetensors');
    closeSync(openSync(big, 'w'));
    truncateSync(big, 600 * 1024 * 1024);
    let started = false;
    page.on('download', () => (started = true));
    await page.getByTestId('run-download').click();
    const error = page.getByTestId('run-download-error');
    await error.waitFor();
    expect(await error.innerText()).toBe(
      `runs/${runId}/checkpoint.safetensors is 600.0 MiB, more than the 512.0 MiB a download includes per file: not downloaded (copy it from the workspace instead)`,
    );
    await page.screenshot({ path: path.join(SHOTS, 'downloads-run-refused-1024.png') });
    expect(started).toBe(false);
    for (const f of ['checkpoint.safetensors', 'stuck.jsonl', 'passwd.log']) rmSync(path.join(runFolder, f));

    // The report's Export row with its Download (zip) fits the narrow window too.
    await page.getByTestId('nav-reports').click();
    await page.getByTestId(`report-${reportId}`).click();
    await page.getByTestId('report-editor').waitFor();
    await page.getByTestId('report-download').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'downloads-report-1024.png') });
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});
