// Issue 13 with issue 12: a report of a real optimisation wizard run (CPU, Fashion-MNIST): the wizard's
// baseline, floors, one attempt per trial with the hypothesis it recorded, and its verdict.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { DOMParser } from '@xmldom/xmldom';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { formatValue } from '../../src-main/api/charts/theme';
import { trialFigures } from '../../src-main/api/paired-figures';
import { formatOptimise } from '../../src-main/cli/optimise-format';
import type { EngineOptimiseResult } from '../../src-main/api/optimise-result';
import { engineWizard } from '../helpers/target-detail';
import type { ReportDetail } from '../../src-main/api/reports';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { cli } from './report-fixture';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

describe('trainbench report of an optimise run', () => {
  let result: EngineOptimiseResult;
  let report: ReportDetail;
  let markdown: string;

  beforeAll(async () => {
    const out = await cli(ws.dir, ['optimise', '--model', 'mlp', '--data', 'fashion-mnist', '--steps', '10', '--warmup-steps', '2', '--repeat', '2', '--max-trials', '2', '--json', '--no-progress']);
    result = engineWizard(JSON.parse(out));
    report = JSON.parse(await cli(ws.dir, ['report', result.runId, '--json'])) as ReportDetail;
    markdown = readFileSync(path.join(ws.dir, report.summary.path), 'utf8');
  }, 300_000);

  it("writes one attempt per trial, with the wizard's hypothesis, decision and numbers", () => {
    expect(result.trials.length).toBeGreaterThanOrEqual(1);
    const attempts = markdown.split('\n').filter((l) => l.startsWith('### Attempt'));
    expect(attempts).toEqual(result.trials.map((t, i) => `### Attempt ${i + 1}: ${t.change.label} (wizard trial ${t.index}, \`${result.runId}\`)`));
    for (const t of result.trials) {
      expect(markdown).toContain(`**Hypothesis** (the wizard's, from its diagnosis): ${t.change.hypothesis}.`);
      // Two A/B pairs: the widest order-statistic interval, [min, max], covers 1 - 2 x (1/2)^2 = 50%, and the report says so.
      if (t.speedup) expect(markdown).toContain(`(50.0% CI ${t.speedup.low > 1 ? '+' : t.speedup.low < 1 ? '\u2212' : ''}${formatValue(Math.abs(100 * (t.speedup.low - 1)))}% to `);
    }
    expect(markdown).toContain(`The wizard's verdict (\`${result.runId}\`, from its run file): ${result.final.verdict}`);
  });

  it('decides nothing on two pairs, and every figure beside a speedup derives from it, in the CLI and the ADR (issue 38)', () => {
    // Two pairs cover 50%: a trial can lean, never keep or reject.
    for (const t of result.trials) expect(['accept', 'reject', 'proposed']).not.toContain(t.decision);
    const text = formatOptimise(result);
    for (const t of result.trials.filter((x) => x.speedup)) {
      const f = trialFigures(t)!;
      const row = markdown.split('\n').find((l) => l.startsWith('| samples/s (current best: median over the pairs; candidate: that times the speedup) |') && l.includes(formatValue(f.best)));
      expect(row, markdown).toBeDefined();
      const [best, cand] = row!.split('|').slice(2, 4).map((c) => Number(c.trim().replace(/,/g, '')));
      // Printed to 3 or 4 significant figures: the ratio agrees with the speedup to that.
      expect(Math.abs(cand / best - t.speedup!.median)).toBeLessThan(0.01 * t.speedup!.median);
      // Every pair is listed with its ratio, and the speedup is their median.
      for (let i = 0; i < t.bestSamplesPerSec.length; i++) expect(markdown).toContain(`| ${i + 1} | ${formatValue(t.bestSamplesPerSec[i])} | ${formatValue(t.candidateSamplesPerSec[i])} | ${(t.candidateSamplesPerSec[i] / t.bestSamplesPerSec[i]).toFixed(3)}x |`);
      if (t.lean) expect(text).toContain(`leaning ${t.lean}, 50.0%`);
    }
    expect(markdown).not.toContain("the side-by-side medians above are each configuration's own");
  });

  it("shows the wizard's baseline, diagnosis and measured floors as its run file holds them", () => {
    const b = result.baseline;
    expect(markdown).toContain(`| samples/s, median of repetitions | ${formatValue(b.samplesPerSec.median)} |`);
    expect(markdown).toContain(`| step time (ms) | ${formatValue(b.stepMs)} |`);
    expect(markdown).toContain(`the step is **${result.diagnosis.bound}**-bound. ${result.diagnosis.summary}`);
    expect(markdown).toContain(`${result.limits.compute.derivation}.`);
    expect(markdown).toContain(result.limits.summary);
    expect(markdown).not.toContain('the optimisation wizard measures both');
  });

  it("gives the optimise command and draws each trial's speedup as the Optimise page does, not bars of samples/s that a loaded machine moves", () => {
    expect(markdown).toContain('trainbench optimise --model mlp --data fashion-mnist --device cpu --read-from cache');
    expect(markdown).toContain('--warmup-steps 2 --steps 10 --repeat 2');
    const svg = readFileSync(path.join(ws.dir, path.dirname(report.summary.path), `trials-${result.runId}.svg`), 'utf8');
    const doc = new DOMParser({ onError: (level, msg) => { if (level !== 'warning') throw new Error(msg); } }).parseFromString(svg, 'image/svg+xml');
    const labels = Array.from(doc.getElementsByTagName('text')).map((t) => t.textContent ?? '');
    expect(labels.some((l) => l.startsWith('Speedup of each trial over the current best'))).toBe(true);
    expect(labels).not.toContain('0. baseline');
    for (const t of result.trials.filter((x) => x.speedup)) expect(labels.some((l) => l.startsWith(`${t.index}. `))).toBe(true);
    expect(markdown).toContain("each one's speedup over the configuration it was measured against");
  });
});
