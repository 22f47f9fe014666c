// Issue 40 in the app: the ranks of a torchrun job at their collectives. The timeline figure's option (ranks as rows,
// the steps side by side on one scale, each collective a bar from arrival to completion, the straggler's row marked),
// what a screen reader hears of it, and the panel's words. The data is a real run's (2 ranks on gloo, rank 1 sleeping
// 30 ms before each backward), rounded.
import { describe, expect, it } from 'vitest';

import type { ScriptCollectives } from '../../src-main/api/collectives';
import { ScriptCollectivesSchema } from '../../src-main/api/collectives';
import {
  collectivesTimelineLabel,
  collectivesTimelineOption,
  MARK_COLOUR,
  MARKS_NAME,
  markItem,
  niceMax,
  rowBand,
  STRAGGLER_COLOUR,
  timelineHeight,
} from '../../src-renderer/charts/collectives-timeline';
import { clockWords, collectiveWords } from '../../src-renderer/view-models/collectives-words';

const REAL: ScriptCollectives = ScriptCollectivesSchema.parse({
  straggler: 1,
  phase: 'host',
  lateMs: 15.75,
  lastShare: [
    { rank: 0, share: 0, low: 0, high: 0.161 },
    { rank: 1, share: 1, low: 0.839, high: 1 },
  ],
  why: "rank 1 arrives last at 100% of 20 steps (95% interval 84%-100%, chance 50%), 15.75 ms after the others' median arrival; it spends longer than the others in host work outside data, compute and communication (Python, logging, a sleep, the optimizer)",
  steps: 20,
  exposedShare: 0.16,
  busBytesPerSec: 224469734.0,
  perStep: { count: 2, bytes: 1597480 },
  timeline: {
    steps: [21, 22, 23],
    ranks: [
      {
        rank: 0,
        marks: [
          { step: 21, index: 0, arriveMs: 0, doneMs: 37.205 },
          { step: 21, index: 1, arriveMs: 0.476, doneMs: 37.877 },
          { step: 22, index: 0, arriveMs: 0, doneMs: 33.489 },
          { step: 22, index: 1, arriveMs: 0.543, doneMs: 35.685 },
          { step: 23, index: 0, arriveMs: 0, doneMs: 30.107 },
          { step: 23, index: 1, arriveMs: 0.438, doneMs: 30.507 },
        ],
      },
      {
        rank: 1,
        marks: [
          { step: 21, index: 0, arriveMs: 33.863, doneMs: 37.342 },
          { step: 21, index: 1, arriveMs: 34.784, doneMs: 37.822 },
          { step: 22, index: 1, arriveMs: 30.605, doneMs: 33.554 },
          { step: 22, index: 0, arriveMs: 30.15, doneMs: 33.585 },
          { step: 23, index: 0, arriveMs: 28.276, doneMs: 29.979 },
          { step: 23, index: 1, arriveMs: 29.143, doneMs: 30.48 },
        ],
      },
    ],
    cut: null,
  },
  clocks: [
    { rank: 0, node: 'vm', offsetMs: 0.051, uncertaintyMs: 0.066 },
    { rank: 1, node: 'vm', offsetMs: 0.031, uncertaintyMs: 0.05 },
  ],
});
const real = { straggler: REAL.straggler, timeline: REAL.timeline! };

interface Series {
  name: string;
  type: string;
  xAxisIndex: number;
  yAxisIndex: number;
  itemStyle: { color: string };
  data: number[][];
  renderItem: unknown;
}
interface Option {
  grid: { left: string; width: string }[];
  xAxis: { min: number; max: number; name: string; gridIndex: number }[];
  yAxis: { inverse: boolean; data: (string | { value: string; textStyle: { color: string; fontWeight: string } })[]; axisLabel: { show: boolean } }[];
  legend: { data: string[] };
  series: Series[];
}
const optionOf = (input: Parameters<typeof collectivesTimelineOption>[0]) => collectivesTimelineOption(input) as unknown as Option;

/** A fake custom-series API: x in ms maps to 10 px per ms from 100, row r to y = 50 + 40 r, rows 40 px apart. */
function fakeApi(values: number[], colour = '#123456') {
  return {
    value: (i: number) => values[i],
    coord: ([x, y]: number[]) => [100 + 10 * x, 50 + 40 * y],
    size: () => [10, 40],
    visual: (key: string) => (key === 'color' ? colour : undefined),
  } as never;
}

describe('the collectives timeline figure', () => {
  it('puts the three steps side by side on one time scale, ranks as rows with rank 0 on top', () => {
    const o = optionOf(real);
    expect(o.xAxis.map((x) => x.name)).toEqual(['step 21 (ms)', 'step 22 (ms)', 'step 23 (ms)']);
    expect(o.xAxis.map((x) => [x.gridIndex, x.min, x.max])).toEqual([[0, 0, 40], [1, 0, 40], [2, 0, 40]]);
    // Equal widths, left to right, never overlapping.
    const grids = o.grid.map((g) => ({ left: parseFloat(g.left), width: parseFloat(g.width) }));
    expect(new Set(grids.map((g) => g.width.toFixed(6))).size).toBe(1);
    for (let i = 1; i < grids.length; i++) expect(grids[i].left).toBeGreaterThan(grids[i - 1].left + grids[i - 1].width);
    expect(grids.at(-1)!.left + grids.at(-1)!.width).toBeLessThanOrEqual(100);
    expect(o.yAxis.every((y) => y.inverse)).toBe(true);
    expect(o.yAxis.map((y) => y.axisLabel.show)).toEqual([true, false, false]);
    expect(o.yAxis[0].data).toEqual(['rank 0', { value: 'rank 1', textStyle: { color: STRAGGLER_COLOUR, fontWeight: 'bold' } }]);
  });

  it('draws every collective of a step in its grid, the straggler in its own colour over a band in its row', () => {
    const o = optionOf(real);
    expect(o.legend.data).toEqual([MARKS_NAME, 'rank 1, the straggler']);
    const step22 = o.series.filter((s) => s.xAxisIndex === 1);
    expect(step22.every((s) => s.yAxisIndex === 1)).toBe(true);
    const [others, late, band] = step22;
    expect([others.name, others.itemStyle.color]).toEqual([MARKS_NAME, MARK_COLOUR]);
    // [arrive, row, done, lane, lanes, rank, step, index]: two buckets a step, each in its own lane.
    expect(others.data).toEqual([
      [0, 0, 33.489, 0, 2, 0, 22, 0],
      [0.543, 0, 35.685, 1, 2, 0, 22, 1],
    ]);
    expect([late.name, late.itemStyle.color]).toEqual(['rank 1, the straggler', STRAGGLER_COLOUR]);
    expect(late.data).toEqual([
      [30.605, 1, 33.554, 1, 2, 1, 22, 1],
      [30.15, 1, 33.585, 0, 2, 1, 22, 0],
    ]);
    expect(band.renderItem).toBe(rowBand);
    expect(band.data).toEqual([[0, 1]]);
    // Every mark of the timeline is drawn once.
    const drawn = o.series.filter((s) => s.renderItem === markItem).reduce((n, s) => n + s.data.length, 0);
    expect(drawn).toBe(12);
  });

  it('with no straggler: one colour, no band, no bold row', () => {
    const o = optionOf({ ...real, straggler: null });
    expect(o.legend.data).toEqual([MARKS_NAME]);
    expect(o.series).toHaveLength(3);
    expect(o.series.every((s) => s.name === MARKS_NAME && s.data.length === 4)).toBe(true);
    expect(o.yAxis[0].data).toEqual(['rank 0', 'rank 1']);
  });

  it('a mark is a bar in its rank row and lane from arrival to completion; an instant stays visible', () => {
    // Arrives at 2 ms, done at 7 ms, row 1, lane 1 of 2.
    const bar = markItem({} as never, fakeApi([2, 1, 7, 1, 2, 1, 5, 1], '#abcdef')) as unknown as { type: string; shape: Record<string, number>; style: { fill: string } };
    expect(bar.type).toBe('rect');
    expect(bar.shape.x).toBe(120);
    expect(bar.shape.width).toBe(50);
    // The row's centre is y = 90; the lanes share 72% of the 40 px row: lane 1 is its lower half.
    expect(bar.shape.y).toBeCloseTo(90 + 0.5, 6);
    expect(bar.shape.height).toBeCloseTo(14.4 - 1, 6);
    expect(bar.style.fill).toBe('#abcdef');
    const instant = markItem({} as never, fakeApi([3, 0, 3, 0, 1, 0, 5, 0])) as unknown as { shape: Record<string, number> };
    expect(instant.shape.width).toBe(2);
  });

  it("the straggler's band spans its step's chart across the whole row", () => {
    const band = rowBand({ coordSys: { x: 60, y: 40, width: 300, height: 200 } } as never, fakeApi([0, 1])) as unknown as { shape: Record<string, number> };
    expect(band.shape).toEqual({ x: 60, y: 70, width: 300, height: 40 });
  });

  it('rounds the shared axis up to a readable end, and grows with the ranks', () => {
    expect(niceMax(37.877)).toBe(40);
    expect(niceMax(1.3)).toBe(1.5);
    expect(niceMax(0.21)).toBe(0.25);
    expect(niceMax(0)).toBe(1);
    expect(timelineHeight(64)).toBeGreaterThan(timelineHeight(8));
    expect(timelineHeight(8)).toBeGreaterThan(timelineHeight(2));
  });

  it('tells a screen reader how many ranks, which steps, and when each arrives and is done', () => {
    expect(collectivesTimelineLabel(real)).toBe(
      "Timeline of the collectives of 2 ranks over steps 21, 22 and 23, ms after each step's first arrival (medians over the steps): " +
        'rank 0 arrives at 0 ms, done at 35.7 ms; rank 1 (the straggler) arrives at 30.2 ms, done at 33.6 ms',
    );
  });

  it('names the first eight ranks and the straggler of a larger job, and counts the rest', () => {
    const ranks = Array.from({ length: 12 }, (_, rank) => ({ rank, marks: [{ step: 3, index: 0, arriveMs: rank === 10 ? 9 : 0, doneMs: 10 }] }));
    const label = collectivesTimelineLabel({ straggler: 10, timeline: { steps: [3], ranks, cut: null } });
    expect(label).toMatch(/^Timeline of the collectives of 12 ranks over step 3, /);
    expect(label).toContain('rank 7 arrives at 0 ms');
    expect(label).not.toContain('rank 8 ');
    expect(label).toContain('rank 10 (the straggler) arrives at 9 ms, done at 10 ms; and 3 more ranks');
  });
});

describe('the Ranks at the collectives panel in words', () => {
  it('names the straggler with its phase, and what communication costs', () => {
    const w = collectiveWords(REAL);
    expect(w.verdict).toBe("Rank 1 is the straggler, late in host work outside data loading, compute and communication: it arrives 15.8 ms after the others' median arrival at the collectives.");
    expect(w.why).toMatch(/^Rank 1 arrives last at 100% of 20 steps .*the optimizer\)\.$/);
    expect(w.exposed).toBe('16.0% of the step (median over 20 steps): time in collectives after the last rank arrived, which nothing overlapped');
    expect(w.bandwidth).toBe('0.224 GB/s all-reduce bus bandwidth (median)');
    expect(w.perStep).toBe("2 per step, 1.6 MB in all (one rank's)");
    expect(w.ranks).toEqual([
      { rank: 0, straggler: false, node: 'vm', clock: '+0.051 ± 0.066 ms', last: '0% of steps (95% interval 0% to 16%)' },
      { rank: 1, straggler: true, node: 'vm', clock: '+0.031 ± 0.05 ms', last: '100% of steps (95% interval 84% to 100%)' },
    ]);
  });

  it('says "no straggler" with the reason, and what was not measured', () => {
    const w = collectiveWords({
      ...REAL,
      straggler: null,
      phase: null,
      why: 'no straggler: no rank arrives last more often than chance: rank 0 at 55% of 20 steps (95% interval 34%-74%), chance 50%',
      busBytesPerSec: null,
      clocks: [{ rank: 0, node: null, offsetMs: null, uncertaintyMs: null }],
    });
    expect(w.verdict).toBe('No straggler: no rank arrives last more often than chance: rank 0 at 55% of 20 steps (95% interval 34%-74%), chance 50%.');
    expect(w.why).toBeNull();
    expect(w.bandwidth).toBe('not measured');
    expect(w.ranks.map((r) => [r.rank, r.node, r.clock])).toEqual([
      [0, 'unknown', 'not measured'],
      [1, 'unknown', 'not measured'],
    ]);
    // Too few steps: the reason has no "no straggler" of its own.
    expect(collectiveWords({ ...REAL, straggler: null, why: "too few steps with every rank's collectives (1) to name a straggler" }).verdict).toBe(
      "No straggler: too few steps with every rank's collectives (1) to name a straggler.",
    );
  });

  it('gives a clock offset its sign and uncertainty', () => {
    expect(clockWords(-1.234, 0.3)).toBe('−1.23 ± 0.3 ms');
    expect(clockWords(0, null)).toBe('+0 ms');
    expect(clockWords(null, 0.2)).toBe('not measured');
  });
});
