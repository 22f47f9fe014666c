// Issue 38: one wizard's result read where a person reads it (the Optimise page in Chromium, the CLI's text, the
// ADR) and the arithmetic checked across all three: each trial's current best, candidate and speedup, and the
// final line's baseline, final configuration and speedup, are the same numbers everywhere and work out; and the
// final card writes the same ADR in one click (issue 41 item 6).
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { formatValue } from '../../src-main/api/charts/theme';
import type { EngineOptimiseResult } from '../../src-main/api/optimise-result';
import { finalFigures, trialFigures } from '../../src-main/api/paired-figures';
import { serveInChromium, SHOTS } from '../helpers/e2e';
import { CLI } from '../helpers/repo';
import { engineWizard } from '../helpers/target-detail';

const run = promisify(execFile);
const x3 = (v: number) => `${v.toFixed(3)}x`;
const n0 = (v: number) => Math.round(v).toLocaleString('en-US');
/** A figure as printed ("1,234", "12.5", "1,234 samples/s") back to a number. */
const num = (text: string) => Number(/-?[\d,]+(\.\d+)?/.exec(text)![0].replace(/,/g, ''));

let cliText = '';
let adr = '';
let result: EngineOptimiseResult;

const fx = serveInChromium({
  timeoutMs: 300_000,
  // The MLP with no loader workers: adding one is a change the wizard can find, so the final comparison may
  // re-measure the baseline (both endings are checked); 5 pairs decide at 93.8%.
  prepare: async (ws) => {
    const args = ['optimise', '--model', 'mlp', '--data', 'fashion-mnist', '--threads', '1'];
    const flags = ['--loader-workers', '0', '--prefetch', '1', '--steps', '30', '--warmup-steps', '3', '--repeat', '5', '--max-trials', '2'];
    const out = await run(process.execPath, [CLI, ...args, ...flags, '--report', '--no-progress', '--workspace', ws], { maxBuffer: 1 << 24 });
    cliText = out.stdout;
    const runId = /^saved {6}runs\/(\S+) /m.exec(cliText)![1];
    result = engineWizard((JSON.parse(readFileSync(path.join(ws, 'runs', runId, 'run.json'), 'utf8')) as { result: unknown }).result);
    const reports = readdirSync(path.join(ws, 'reports'));
    const md = readdirSync(path.join(ws, 'reports', reports[0])).find((f) => f.endsWith('.md'))!;
    adr = readFileSync(path.join(ws, 'reports', reports[0], md), 'utf8');
  },
});

describe("one wizard's numbers on the page, in the CLI and in the ADR (issue 38)", () => {
  it('shows every trial and the final line with the same figures everywhere, and their arithmetic works out', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1440, height: 1000 } });
    await page.goto(`${fx.serve.url}#/optimise`);
    await page.getByTestId(`opt-past-${result.jobId}`).click();
    await page.getByTestId('opt-trial-1').waitFor({ timeout: 30_000 });
    await page.screenshot({ path: path.join(SHOTS, 'numbers-agree-optimise.png'), fullPage: true });

    const measured = result.trials.filter((t) => t.speedup);
    expect(measured.length).toBeGreaterThan(0);
    const cliRows = cliText.split('\n');
    const adrRows = adr.split('\n').filter((l) => l.startsWith('| samples/s (current best: median over the pairs; candidate: that times the speedup) |'));
    for (const t of measured) {
      const f = trialFigures(t, result.objective)!;
      // The page: the current best, the candidate (best x speedup) and the speedup, as the estimator gives them.
      const [best, candidate, speedup] = [
        await page.getByTestId(`opt-trial-${t.index}-best`).innerText(),
        await page.getByTestId(`opt-trial-${t.index}-candidate`).innerText(),
        await page.getByTestId(`opt-trial-${t.index}-speedup`).innerText(),
      ];
      expect(best).toBe(formatValue(f.best, f.unit));
      expect(candidate.split('\n')[0]).toBe(formatValue(f.candidate, f.unit));
      expect(speedup.split('\n')[0]).toBe(x3(t.speedup!.median));
      expect(Math.abs(num(candidate) / num(best) - t.speedup!.median)).toBeLessThan(0.01 * t.speedup!.median);
      // The CLI: the same speedup and interval in the trial's row.
      const row = cliRows.find((l) => new RegExp(`^ {0,2}${t.index}  `).test(l));
      expect(row, cliText).toContain(`${x3(t.speedup!.median)} [${x3(t.speedup!.low)}, ${x3(t.speedup!.high)}]`);
      // The ADR: the same two figures as the page, whose ratio is the speedup.
      const adrRow = adrRows.find((l) => l.split('|')[2].trim() === formatValue(f.best));
      expect(adrRow, adr).toBeDefined();
      const [adrBest, adrCandidate] = adrRow!.split('|').slice(2, 4).map((c) => num(c));
      expect(adrBest).toBe(num(best));
      expect(adrCandidate).toBe(num(candidate));
    }

    // The final line: which baseline it compares to, and baseline x speedup = final configuration, on all three.
    const f = finalFigures(result.final, result.baseline, result.repeat, result.objective)!;
    const shown = await page.getByTestId('opt-final-figures').innerText();
    // With nothing kept there is no speedup to show (a 1.000x (1.000x–1.000x) read as a measured interval).
    if (result.final.changes.length) expect(shown).toContain(`speedup over the baseline ${x3(result.final.speedup.median)}`);
    else expect(shown).toMatch(/no final comparison: nothing was kept to compare with the baseline$/);
    expect(await page.getByTestId(`opt-past-${result.jobId}`).innerText()).toContain(x3(result.final.speedup.median));
    // The engine's CLI prints the kept changes on the final line and the figures on the next.
    const at = cliRows.findIndex((l) => l.startsWith('final '));
    const cliFinal = `${cliRows[at]} ${cliRows[at + 1]}`;
    if (f.remeasured) {
      expect(shown).toContain(`baseline re-measured in the final comparison ${formatValue(f.best, 'samples/s')} → ${formatValue(f.candidate, 'samples/s')}`);
      const m = /baseline re-measured in the final comparison ([\d,]+) samples\/s; final configuration ([\d,]+) samples\/s \(that x ([\d.]+)\)/.exec(cliFinal);
      expect(m, cliFinal).not.toBeNull();
      expect([num(m![1]), num(m![2])]).toEqual([num(n0(f.best)), num(n0(f.candidate))]);
      expect(Math.abs(num(m![2]) / num(m![1]) - Number(m![3]))).toBeLessThan(0.002 * Number(m![3]) + 1 / num(m![1]));
      expect(adr).toContain(`the baseline re-measured in that comparison ${formatValue(f.best)} samples/s, the final configuration ${formatValue(f.candidate)} samples/s (that times the speedup)`);
    } else {
      // Nothing kept: nothing was measured again, and every surface says the baseline as measured at the start.
      expect(shown).toContain(`baseline ${formatValue(f.best, 'samples/s')}`);
      expect(cliFinal).toContain(`${n0(f.best)} samples/s, the baseline as measured at the start`);
      expect(adr).not.toContain('the baseline re-measured in that comparison');
    }

    // --report wrote this optimisation's ADR: the card links it, and writing again is offered as that (a UI walk made copies).
    const open = page.getByTestId('opt-open-report');
    await open.waitFor();
    expect(await open.innerText()).toMatch(/^Open its ADR report \(\d+\)$/);
    expect(await open.getAttribute('href')).toMatch(/#\/reports\?report=0001-/);
    expect(await page.getByTestId('opt-write-report').innerText()).toBe('Write it again');
    // The same ADR in one click from the final card (issue 41 item 6), as --report wrote it: the Reports area opens on it.
    await page.getByTestId('opt-write-report').click();
    await page.getByTestId('report-editor').waitFor({ timeout: 60_000 });
    expect(page.url()).toMatch(/#\/reports/);
    const written = await page.getByTestId('report-markdown').inputValue();
    expect(written).toContain(`The wizard's verdict (\`${result.runId}\`, from its run file): ${result.final.verdict}`);
    expect(written.split('\n').filter((l) => l.startsWith('### Attempt'))).toEqual(adr.split('\n').filter((l) => l.startsWith('### Attempt')));
    await page.screenshot({ path: path.join(SHOTS, 'numbers-agree-report.png'), fullPage: true });
    await page.close();
  });
});
