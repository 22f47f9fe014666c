// The Optimise area's chart builders on a real wizard result (a CPU run of the MLP on Fashion-MNIST,
// recorded by `trainbench optimise --json`), drawn with ECharts' server-side renderer as the reports do.
import { readFileSync } from 'node:fs';

import { DOMParser } from '@xmldom/xmldom';
import * as echarts from 'echarts';
import type { EChartsCoreOption } from 'echarts/core';
import { describe, expect, it } from 'vitest';

import { bestSoFar, DECISION_COLOURS, limitBars, limitsLabel, limitsOption, trialLabels, trialsLabel, trialsOption } from '../../src-main/api/charts/optimise-charts';
import type { OptimiseTrial } from '../../src-main/api/optimise';
import type { EngineOptimiseResult } from '../../src-main/api/optimise-result';
import { engineWizard } from '../helpers/target-detail';

// A run that kept one change, recorded with: trainbench optimise --model mlp --data fashion-mnist --loader-workers 0 --prefetch 1 --steps 10 --warmup-steps 2 --repeat 3 --max-trials 3 --threads 1 --json
const recorded = (): EngineOptimiseResult => engineWizard(JSON.parse(readFileSync('test/fixtures/optimise/cpu-mlp-result.json', 'utf8')));

/** The option drawn to SVG (strict XML), and the text it shows. */
function draw(option: EChartsCoreOption): { svg: string; texts: string[] } {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: 760, height: 360 });
  try {
    chart.setOption(option);
    const svg = chart.renderToSVGString();
    const errors: string[] = [];
    const doc = new DOMParser({ onError: (level, msg) => void (level !== 'warning' && errors.push(msg)) }).parseFromString(svg, 'image/svg+xml');
    expect(errors).toEqual([]);
    const texts = Array.from(doc.getElementsByTagName('text')).map((t) => t.textContent ?? '');
    return { svg, texts };
  } finally {
    chart.dispose();
  }
}

type Series = { name: string; type: string; data: (number[] | null | { value: number })[]; markLine?: { data: { yAxis: number; name: string }[] } };
const seriesOf = (option: EChartsCoreOption) => (option as { series: Series[] }).series;

/** A trial the service records when the engine host dies: no speedup, the engine's words kept. */
function crashedLike(t: OptimiseTrial, index: number): OptimiseTrial {
  return { ...t, index, decision: 'crashed', speedup: null, kept: false, candidateSamplesPerSec: [], why: 'the trial crashed the engine host; the wizard continues from the current best', error: 'engine host exited (SIGKILL)' };
}

describe('trial speedup chart', () => {
  it('puts each trial at its place with its median coloured by decision, its CI as an error bar, and the lines a kept change must clear', () => {
    const r = recorded();
    const option = trialsOption(r.trials, r.baseline.noiseFloor);
    const series = seriesOf(option);
    const decisions = [...new Set(r.trials.map((t) => t.decision))];
    const points = series.filter((s) => s.type === 'scatter' && s.name !== 'references');
    expect(points.length).toBe(decisions.length);
    for (const t of r.trials) {
      const s = points.find((p) => p.data.some((d) => Array.isArray(d) && d[0] === t.index - 1))!;
      expect((s as unknown as { itemStyle: { color: string } }).itemStyle.color).toBe(DECISION_COLOURS[t.decision]);
      expect((s.data.find((d) => Array.isArray(d) && d[0] === t.index - 1) as number[])[1]).toBeCloseTo(t.speedup!.median, 3);
    }
    const bars = series.find((s) => s.type === 'custom')!.data as number[][];
    expect(bars.map((b) => b[0])).toEqual(r.trials.map((t) => t.index - 1));
    expect(bars.map((b) => [b[1], b[2]])).toEqual(r.trials.map((t) => [+t.speedup!.low.toFixed(4), +t.speedup!.high.toFixed(4)]));
    const lines = points[0].markLine!.data.map((m) => m.yAxis);
    expect(lines).toEqual([1, +(1 + r.baseline.noiseFloor).toFixed(4)]);

    // The axis reaches the noise floor's line even when every interval stays below it (invisible points hold it there).
    const noisy = trialsOption(r.trials, 0.9);
    expect(seriesOf(noisy).find((x) => x.name === 'references')!.data).toEqual([
      [0, 1],
      [0, 1.9],
    ]);
    const noisyChart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: 760, height: 360 });
    noisyChart.setOption(noisy);
    const [low, high] = (noisyChart as unknown as { getModel(): { getComponent(t: string): { axis: { scale: { getExtent(): number[] } } } } }).getModel().getComponent('yAxis').axis.scale.getExtent();
    noisyChart.dispose();
    expect(high).toBeGreaterThanOrEqual(1.9);
    expect(low).toBeLessThanOrEqual(Math.min(1, ...r.trials.map((t) => t.speedup!.low)));

    const { texts } = draw(option);
    expect(texts).toContain('Speedup of each trial over the current best (median, confidence interval)');
    expect(texts).toContain(`noise floor +${(100 * r.baseline.noiseFloor).toFixed(1)}%`);
    expect(texts.some((t) => t.includes('loader workers 0 -> 1'))).toBe(true);
    expect(texts).toContain('accepted');
  });

  it('keeps a crashed trial on the axis without a point, and says so', () => {
    const r = recorded();
    const trials = [...r.trials, crashedLike(r.trials[0], r.trials.length + 1)];
    const option = trialsOption(trials, r.baseline.noiseFloor);
    expect((option as { xAxis: { data: string[] } }).xAxis.data).toEqual(trialLabels(trials));
    const at = trials.length - 1;
    for (const s of seriesOf(option)) expect(s.data.some((d) => Array.isArray(d) && d[0] === at)).toBe(false);
    expect(trialsLabel(trials)).toMatch(new RegExp(`${trials.length}\\. batch size 64 -> 128: crashed, no speedup measured$`));
    // --repeat 3: three pairs, whose widest interval covers 1 - 2 x (1/2)^3 = 75%, not 95%.
    expect(trialsLabel(trials)).toMatch(/2\. loader workers 0 -> 1: accepted, \d\.\d{3}x \(75\.0% CI \d\.\d{3}x to \d\.\d{3}x\)/);
    expect(draw(option).texts).toContain('crashed');
    expect(trialsLabel([])).toBe('Trial speedups chart, no trial finished yet');
  });

  it('names a trial that only leans in its legend, as it is drawn with the inconclusive ones', () => {
    const r = recorded();
    const leaning = { ...r.trials[0], decision: 'inconclusive' as const, lean: 'faster' as const };
    const legend = (o: unknown) => (o as { legend: { data: string[] } }).legend.data;
    expect(legend(trialsOption([leaning], r.baseline.noiseFloor))).toEqual(['inconclusive or leaning']);
    expect(legend(trialsOption([{ ...leaning, lean: undefined }], r.baseline.noiseFloor))).toEqual(['inconclusive']);
  });
});

describe('limits chart', () => {
  it('shows the baseline with its CI, the best so far, and the slower data floor beside the compute floor', () => {
    const r = recorded();
    const best = bestSoFar(r.baseline, r.trials, r.final);
    const input = { baseline: r.baseline, best, limits: r.limits };
    const bars = limitBars(input);
    expect(bars.map((b) => b.name)).toEqual(['baseline', 'final: kept changes', 'data floor', 'compute floor']);
    expect(bars[0].samplesPerSec).toBe(r.baseline.samplesPerSec.median);
    // On the CPU nothing is copied to a device: the data floor is the read floor.
    expect(r.limits.h2d.samplesPerSec).toBeNull();
    expect(bars[2].samplesPerSec).toBe(r.limits.read.samplesPerSec);
    expect(bars[2].note).toContain(r.limits.read.derivation);
    expect(bars[3].samplesPerSec).toBe(r.limits.compute.samplesPerSec);

    const option = limitsOption(input);
    const values = seriesOf(option)[0].data.map((d) => (d === null || Array.isArray(d) ? null : d.value));
    expect(values).toEqual(bars.map((b) => Math.round(b.samplesPerSec!)));
    const ci = seriesOf(option)[1].data as number[][];
    expect(ci[0]).toEqual([0, Math.round(r.baseline.samplesPerSec.low), Math.round(r.baseline.samplesPerSec.high)]);
    const { texts } = draw(option);
    expect(texts).toContain('compute floor');
    // Each bar's value is written under its name.
    expect(texts).toContain(`${Math.round(r.baseline.samplesPerSec.median).toLocaleString('en-US')} samples/s`);
    expect(limitsLabel(input)).toMatch(/^Limits chart in samples\/s: baseline [\d,]+ samples\/s; final: kept changes [\d,]+ samples\/s; data floor [\d,.]+[KM]? ?samples\/s; compute floor/);
  });

  it('takes the slower of the read and copy floors, and marks a floor that was not measured', () => {
    const r = recorded();
    const slowCopy = { ...r.limits.h2d, samplesPerSec: r.limits.read.samplesPerSec! / 10, stepMs: 1, derivation: '64 x 785 bytes at 50 MB/s (measured pinned copy)' };
    const withCopy = limitBars({ baseline: r.baseline, best: bestSoFar(r.baseline, [], null), limits: { ...r.limits, h2d: slowCopy } });
    expect(withCopy[2].samplesPerSec).toBe(slowCopy.samplesPerSec);
    expect(withCopy[2].note).toBe(`host-to-device copy: ${slowCopy.derivation}`);

    const unmeasured = { ...r.limits.compute, samplesPerSec: null, stepMs: null, baselineOverFloor: null, derivation: 'no GEMM rate: the engine could not time a GEMM on this device' };
    const input = { baseline: r.baseline, best: bestSoFar(r.baseline, [], null), limits: { ...r.limits, compute: unmeasured } };
    const bars = limitBars(input);
    expect(bars[3].samplesPerSec).toBeNull();
    expect(bars[3].note).toBe(`not measured: ${unmeasured.derivation}`);
    const option = limitsOption(input);
    expect(seriesOf(option)[0].data[3]).toBeNull();
    expect((option as { xAxis: { data: string[] } }).xAxis.data[3]).toBe('compute floor\n(not measured)');
    expect((option as { xAxis: { data: string[] } }).xAxis.data[0]).toMatch(/^baseline\n[\d,]+ samples\/s$/);
    expect(limitsLabel(input)).toMatch(/compute floor not measured$/);
    draw(option);
  });
});

describe('best so far', () => {
  it('is the freshest measurement of the current best', () => {
    const r = recorded();
    // Finished with a kept change: the final A/B/A/B measurement as its speedup gives it. This run file predates the
    // re-measured baseline being kept, so the baseline side is implied (the final's median over the speedup).
    const final = bestSoFar(r.baseline, r.trials, r.final);
    expect(final).toMatchObject({ label: 'final: kept changes', drift: null });
    expect(final.samplesPerSec).toBeCloseTo(r.final.samplesPerSec.median, 6);
    // With the re-measured baseline kept: that times the speedup, the bar's interval the speedup's (issue 38).
    const remeasured = { low: 900, median: 1000, high: 1100 };
    const withSide = bestSoFar(r.baseline, r.trials, { ...r.final, baselineSamplesPerSec: remeasured });
    expect(withSide.samplesPerSec).toBeCloseTo(1000 * r.final.speedup.median, 9);
    expect(withSide.ci).toEqual({ low: 1000 * r.final.speedup.low, median: 1000 * r.final.speedup.median, high: 1000 * r.final.speedup.high });
    expect(withSide.source).toBe('the baseline as re-measured in the final comparison (1,000 samples/s) times the final speedup');
    // Mid-run after the kept trial: its current best's median times its speedup, not the candidate's own median.
    const kept = r.trials.findIndex((t) => t.kept);
    expect(kept).toBeGreaterThanOrEqual(0);
    const afterKept = bestSoFar(r.baseline, r.trials.slice(0, kept + 1), null);
    const best = [...r.trials[kept].bestSamplesPerSec].sort((a, b) => a - b);
    const bestMedian = best.length % 2 ? best[best.length >> 1] : (best[best.length / 2 - 1] + best[best.length / 2]) / 2;
    expect(afterKept.samplesPerSec).toBeCloseTo(bestMedian * r.trials[kept].speedup!.median, 9);
    expect(afterKept.source).toMatch(/current best \(median of \d+ pairs\) times its speedup/);
    expect(afterKept.label).toBe(`kept in trial ${r.trials[kept].index}`);
    // After a trial that kept nothing: that trial's current-best side.
    const last = r.trials[r.trials.length - 1];
    expect(last.kept).toBe(false);
    const sides = [...last.bestSamplesPerSec].sort((a, b) => a - b);
    expect(bestSoFar(r.baseline, r.trials, null).samplesPerSec).toBe(sides[sides.length >> 1]);
    // Before any trial: the baseline.
    expect(bestSoFar(r.baseline, [], null).ci).toEqual(r.baseline.samplesPerSec);
    expect(bestSoFar(r.baseline, [], null).label).toBe('current best: the baseline');
  });

  it("with nothing kept, is the baseline's configuration re-measured, and says the load changed when the two differ beyond the noise (issue 27)", () => {
    const r = recorded();
    const b = r.baseline.samplesPerSec.median;
    const trial = (index: number, best: number[]) => ({ index, kept: false, speedup: null, bestSamplesPerSec: best, candidateSamplesPerSec: [b * 0.9] });
    const same = bestSoFar(r.baseline, [trial(1, [b, b * 1.001])], null);
    expect(same).toMatchObject({ label: 'baseline, re-measured in trial 1', drift: null });
    // The issue's case: 2.3x the baseline with no change kept.
    const loaded = bestSoFar({ ...r.baseline, noiseFloor: 0.032 }, [trial(1, [b]), trial(2, [2.3 * b, 2.3 * b])], null);
    expect(loaded.label).toBe('baseline, re-measured in trial 2');
    expect(loaded.drift).toBe(
      "the baseline's own configuration measured 130% faster in trial 2 than at the start (noise ±3.2%): the machine's load changed between the measurements",
    );
    // UI walk 7: trial 1 measured it 56% slower, trial 3 28% slower; only trial 3 was named.
    const both = bestSoFar({ ...r.baseline, noiseFloor: 0.004 }, [trial(1, [0.44 * b]), trial(2, [b]), trial(3, [0.72 * b])], null);
    expect(both.drift).toBe(
      "the baseline's own configuration measured 56% slower in trial 1 and 28% slower in trial 3 than at the start (noise ±0.4%): the machine's load changed between the measurements",
    );
    const bars = limitBars({ baseline: r.baseline, best: loaded, limits: r.limits });
    expect(bars[1]).toMatchObject({ name: 'baseline, re-measured in trial 2', colour: '#d29922' });
    expect(bars[1].note).toContain("the machine's load changed");
    // After a kept change, the current best re-measured is not the baseline's configuration: no drift is claimed.
    const later = bestSoFar({ ...r.baseline, noiseFloor: 0.032 }, [{ ...trial(1, [b]), kept: true, candidateSamplesPerSec: [1.5 * b] }, trial(2, [2.3 * b])], null);
    expect(later).toMatchObject({ label: 'current best, re-measured in trial 2', drift: null });
  });
});
