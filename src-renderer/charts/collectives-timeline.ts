// The ranks of a multi-rank job at their collectives (issue 40), as a figure: ranks as rows, time as x, each
// collective a short bar from the rank's arrival to its completion; the recorded steps side by side, one small
// chart each on a shared scale; the straggler's row highlighted. A pure function of the result's timeline.
import { formatValue, GRID_LINE, MUTED, PALETTE, TEXT, titleAndLegend, tooltip } from '@api/charts/theme';
import type { ScriptCollectives } from '@api/collectives';
import type { CustomSeriesRenderItemAPI, CustomSeriesRenderItemParams, CustomSeriesRenderItemReturn } from 'echarts';
import type { EChartsCoreOption } from 'echarts/core';

type Timeline = NonNullable<ScriptCollectives['timeline']>;
export interface TimelineInput {
  straggler: ScriptCollectives['straggler'];
  timeline: Timeline;
}

export const MARK_COLOUR = PALETTE[0];
export const STRAGGLER_COLOUR = PALETTE[1];
const STRAGGLER_BAND = 'rgba(242, 169, 59, 0.14)';
/** The series names the legend shows. */
export const MARKS_NAME = 'collective, arrival to completion';
export const stragglerName = (rank: number) => `rank ${rank}, the straggler`;
/** Collectives overlap in time on one rank: each gets a lane of its row (index modulo this many), so none hides another. */
const MAX_LANES = 6;

/** Value dimensions of a mark: [arriveMs, row, doneMs, lane, lanes, rank, step, collective index]. */
type MarkValue = [number, number, number, number, number, number, number, number];

/** The rows top to bottom: the timeline's ranks in order. */
export function timelineRows(t: Timeline): number[] {
  return t.ranks.map((r) => r.rank).sort((a, b) => a - b);
}

/** Pixels the figure needs for its rows (short rows when there are many ranks). */
export function timelineHeight(rows: number): number {
  return 110 + rows * (rows <= 4 ? 40 : rows <= 16 ? 24 : 12);
}

/** A round upper end for the shared time axis (40 for 37.9 ms, 1.5 for 1.3 ms). */
export function niceMax(x: number): number {
  if (!(x > 0)) return 1;
  const half = 10 ** Math.floor(Math.log10(x)) / 2;
  return Number((Math.ceil(x / half) * half).toPrecision(6));
}

/** A mark: a bar in its rank's row, in its lane, from arrival to completion (at least 2 px wide, so an instant stays visible). */
export function markItem(_params: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI): CustomSeriesRenderItemReturn {
  const row = api.value(1) as number;
  const start = api.coord([api.value(0), row]);
  const end = api.coord([api.value(2), row]);
  const band = ((api.size?.([0, 1]) as number[] | undefined)?.[1] ?? 20) * 0.72;
  const lanes = api.value(4) as number;
  const laneHeight = band / lanes;
  const top = start[1] - band / 2 + (api.value(3) as number) * laneHeight;
  return {
    type: 'rect',
    shape: { x: start[0], y: top + 0.5, width: Math.max(2, end[0] - start[0]), height: Math.max(1, laneHeight - 1) },
    style: { fill: api.visual('color') as string },
  };
}

/** The straggler's row: a band the width of its step's chart, under the marks. */
export function rowBand(params: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI): CustomSeriesRenderItemReturn {
  const area = params.coordSys as unknown as { x: number; width: number };
  const centre = api.coord([0, api.value(1)]);
  const band = (api.size?.([0, 1]) as number[] | undefined)?.[1] ?? 20;
  return { type: 'rect', shape: { x: area.x, y: centre[1] - band / 2, width: area.width, height: band }, style: { fill: STRAGGLER_BAND } };
}

const markTooltip = (p: { value?: unknown }) => {
  const [arrive, , done, , , rank, step, index] = p.value as MarkValue;
  return `rank ${rank}, step ${step}, collective ${index + 1}<br/>arrived ${formatValue(arrive, 'ms')}, done ${formatValue(done, 'ms')} (${formatValue(done - arrive, 'ms')} in it)`;
};

/**
 * The timeline figure: one small chart per recorded step, side by side on one time scale (ms after that step's first
 * arrival on any rank); in each, ranks as rows (rank 0 on top) and every collective as a bar from the rank's arrival
 * to its completion. The straggler's bars take their own colour, its row a band, and its axis label is bold.
 */
export function collectivesTimelineOption(input: TimelineInput): EChartsCoreOption {
  const { timeline: t, straggler } = input;
  const rows = timelineRows(t);
  const rowOf = new Map(rows.map((r, i) => [r, i]));
  const stragglerRow = straggler === null ? undefined : rowOf.get(straggler);
  const marks = t.ranks.flatMap((r) => r.marks.map((m) => ({ rank: r.rank, ...m })));
  const lanes = Math.min(MAX_LANES, Math.max(1, ...marks.map((m) => m.index + 1)));
  const max = niceMax(Math.max(0, ...marks.map((m) => m.doneMs)));
  const head = titleAndLegend('Collectives by rank, arrival to completion', true);
  const steps = t.steps;
  // Percent of the width: room for the rank labels on the left, then the steps side by side with a gap between.
  const left = 9;
  const gap = 4;
  const width = (100 - left - 2 - gap * Math.max(0, steps.length - 1)) / Math.max(1, steps.length);
  const data = (step: number, ofStraggler: boolean) =>
    marks
      .filter((m) => m.step === step && (m.rank === straggler) === ofStraggler)
      .map((m): MarkValue => [m.arriveMs, rowOf.get(m.rank)!, m.doneMs, m.index % lanes, lanes, m.rank, m.step, m.index]);
  const markSeries = (i: number, name: string, colour: string, ofStraggler: boolean) => ({
    name,
    type: 'custom',
    xAxisIndex: i,
    yAxisIndex: i,
    renderItem: markItem,
    encode: { x: [0, 2], y: 1 },
    itemStyle: { color: colour },
    tooltip: { formatter: markTooltip },
    z: 3,
    data: data(steps[i], ofStraggler),
  });
  const legend = [MARKS_NAME, ...(stragglerRow === undefined ? [] : [stragglerName(straggler!)])];
  return {
    animation: false,
    title: head.title,
    legend: { ...head.legend, data: legend },
    tooltip: { ...tooltip('ms', 'item') },
    grid: steps.map((_, i) => ({ left: `${left + i * (width + gap)}%`, width: `${width}%`, top: head.gridTop + 8, bottom: 44 })),
    xAxis: steps.map((s, i) => ({
      type: 'value',
      gridIndex: i,
      min: 0,
      max,
      name: `step ${s} (ms)`,
      nameLocation: 'middle',
      nameGap: 24,
      nameTextStyle: { color: TEXT, fontSize: 11 },
      axisLabel: { color: MUTED, fontSize: 10, hideOverlap: true, formatter: (v: number) => formatValue(v) },
      axisLine: { lineStyle: { color: GRID_LINE } },
      splitLine: { lineStyle: { color: GRID_LINE } },
    })),
    yAxis: steps.map((_, i) => ({
      type: 'category',
      gridIndex: i,
      inverse: true,
      data: rows.map((r) => (r === straggler ? { value: `rank ${r}`, textStyle: { color: STRAGGLER_COLOUR, fontWeight: 'bold' } } : `rank ${r}`)),
      axisLabel: { show: i === 0, color: MUTED, fontSize: 10, interval: 0 },
      axisTick: { show: false },
      axisLine: { lineStyle: { color: GRID_LINE } },
      splitLine: { show: true, lineStyle: { color: GRID_LINE } },
    })),
    series: steps.flatMap((_, i) => [
      markSeries(i, MARKS_NAME, MARK_COLOUR, false),
      ...(stragglerRow === undefined
        ? []
        : [
            markSeries(i, stragglerName(straggler!), STRAGGLER_COLOUR, true),
            {
              name: stragglerName(straggler!),
              type: 'custom',
              xAxisIndex: i,
              yAxisIndex: i,
              renderItem: rowBand,
              encode: { x: 0, y: 1 },
              itemStyle: { color: STRAGGLER_COLOUR },
              silent: true,
              tooltip: { show: false },
              z: 1,
              data: [[0, stragglerRow]],
            },
          ]),
    ]),
  };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** The steps as words: "step 7", "steps 7 and 8", "steps 21, 22 and 23". */
function stepsWords(steps: readonly number[]): string {
  if (steps.length === 1) return `step ${steps[0]}`;
  return `steps ${steps.slice(0, -1).join(', ')} and ${steps.at(-1)}`;
}

/** Ranks the label names one by one; a larger job is summed up after them. */
const LABEL_RANKS = 8;

/**
 * What a screen reader announces for the figure: how many ranks and which steps, and per rank (the first few, and the
 * straggler) when it first arrives at a collective and when its last one completes, medians over the steps.
 */
export function collectivesTimelineLabel(input: TimelineInput): string {
  const { timeline: t, straggler } = input;
  const rows = timelineRows(t);
  const named = rows.filter((r, i) => i < LABEL_RANKS || r === straggler);
  const per = named.map((rank) => {
    const marks = t.ranks.find((r) => r.rank === rank)!.marks;
    const atSteps = t.steps.map((s) => marks.filter((m) => m.step === s)).filter((ms) => ms.length);
    if (!atSteps.length) return `rank ${rank}${rank === straggler ? ' (the straggler)' : ''}: no collectives`;
    const first = median(atSteps.map((ms) => Math.min(...ms.map((m) => m.arriveMs))));
    const last = median(atSteps.map((ms) => Math.max(...ms.map((m) => m.doneMs))));
    return `rank ${rank}${rank === straggler ? ' (the straggler)' : ''} arrives at ${formatValue(first, 'ms')}, done at ${formatValue(last, 'ms')}`;
  });
  const more = rows.length - named.length;
  return (
    `Timeline of the collectives of ${rows.length} ranks over ${stepsWords(t.steps)}, ms after each step's first arrival (medians over the steps): ` +
    `${per.join('; ')}${more > 0 ? `; and ${more} more ranks` : ''}`
  );
}
