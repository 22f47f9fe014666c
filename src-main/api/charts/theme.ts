// One place for how every chart looks: the dark tooltip, rounded values with units,
// the legend under the title, one colour per GPU, and the time axis.

export const TEXT = '#e6edf3';
export const MUTED = '#8b98a5';
export const GRID_LINE = '#26313b';
const PANEL = '#151c23';

/** Series colours; GPU i is always PALETTE[i % n] so one GPU keeps its colour across charts. */
export const PALETTE = ['#4fb3ff', '#f2a93b', '#3fb950', '#d16ba5', '#a371f7', '#56d4dd', '#f85149', '#c9d1d9'];

export function colourFor(index: number): string {
  return PALETTE[((index % PALETTE.length) + PALETTE.length) % PALETTE.length];
}

/**
 * A value as a person reads it: three significant digits at most (1 234, 56.7, 8.91, 0.123),
 * the unit after it, and `no data` for a gap.
 */
export function formatValue(value: unknown, unit = ''): string {
  if (value == null || value === '' || Number.isNaN(Number(value))) return 'no data';
  const v = Number(value);
  const abs = Math.abs(v);
  const digits = abs >= 100 || Number.isInteger(v) ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  const text = v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
  return unit ? `${text} ${unit}` : text;
}

const BYTE_UNITS = ['B', 'kB', 'MB', 'GB', 'TB'];

/**
 * A size as a person reads it, in the largest decimal unit it reaches (1 kB = 1000 B) with formatValue's digits:
 * "512 B", "4.1 kB", "47 MB"; never "0.0 MB" for a small file.
 */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return 'no data';
  let v = Math.abs(bytes);
  let u = 0;
  // Rounded as shown: 999.96 kB reads as "1 MB", not "1,000 kB".
  while (u < BYTE_UNITS.length - 1 && Number(formatValue(v).replace(/,/g, '')) >= 1000) {
    v /= 1000;
    u++;
  }
  return formatValue(Math.sign(bytes) * (u === 0 ? Math.round(v) : v), BYTE_UNITS[u]);
}

/** The dark tooltip every chart uses. */
export function tooltip(unit: string, trigger: 'axis' | 'item' = 'axis') {
  return {
    trigger,
    backgroundColor: PANEL,
    borderColor: GRID_LINE,
    textStyle: { color: TEXT, fontSize: 12 },
    axisPointer: { lineStyle: { color: MUTED }, shadowStyle: { color: 'rgba(139, 152, 165, 0.12)' } },
    valueFormatter: (v: unknown) => formatValue(v, unit),
  };
}

/** Title on the first line, legend on its own line under it (never over the title), and the grid below both. */
export function titleAndLegend(title: string, showLegend: boolean) {
  return {
    title: { text: title, left: 8, top: 4, textStyle: { color: TEXT, fontSize: 12, fontWeight: 500 } },
    legend: {
      show: showLegend,
      type: 'scroll',
      left: 8,
      right: 8,
      top: 22,
      itemHeight: 8,
      itemWidth: 14,
      textStyle: { color: MUTED, fontSize: 11 },
      pageTextStyle: { color: MUTED },
      pageIconColor: MUTED,
    },
    gridTop: showLegend ? 48 : 30,
  };
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** Tick steps a person reads easily. */
const STEPS = [5, 10, 15, 30].map((s) => s * SECOND).concat([1, 2, 5, 10, 15, 30].map((m) => m * MINUTE), [1, 2, 3, 6, 12].map((h) => h * HOUR));

/** The smallest readable step that puts at most `ticks` labels across a window. */
export function tickStep(windowMs: number, ticks = 6): number {
  return STEPS.find((s) => windowMs / s <= ticks) ?? 24 * HOUR;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** A time label with seconds only when the ticks are seconds apart. */
export function timeLabel(t: number, stepMs: number): string {
  const d = new Date(t);
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return stepMs < MINUTE ? `${hm}:${pad(d.getSeconds())}` : hm;
}

/** A time x axis whose labels stay apart at any window: fixed readable steps, seconds shown only when needed. */
export function timeAxis(windowMs: number) {
  const step = tickStep(windowMs);
  return {
    type: 'time',
    minInterval: step,
    maxInterval: step,
    axisLabel: { color: MUTED, fontSize: 10, hideOverlap: true, formatter: (t: number) => timeLabel(t, step) },
    axisLine: { lineStyle: { color: GRID_LINE } },
    splitLine: { show: false },
  };
}

/** The visible span: the window ending now, but not reaching back before the first sample, so a young history fills the chart. */
export function visibleSpan(now: number, windowMs: number, firstT: number | undefined): { min: number; max: number } {
  const min = now - windowMs;
  // Keep at least a few seconds visible so one sample does not make a zero-width axis.
  const start = firstT === undefined ? min : Math.min(Math.max(min, firstT), now - 10 * SECOND);
  return { min: start, max: now };
}

export type Point = [number, number | null];

/**
 * Points with a null inserted where samples stopped for longer than `maxGapMs` (a number, or the
 * longest gap allowed before point i, for histories of mixed periods), so the line breaks there
 * (with connectNulls: false) instead of drawing a straight line over missing time.
 */
export function withGaps(points: Point[], maxGapMs: number | ((i: number) => number)): Point[] {
  const out: Point[] = [];
  const allowed = typeof maxGapMs === 'number' ? () => maxGapMs : maxGapMs;
  for (let i = 0; i < points.length; i++) {
    if (i > 0 && points[i][0] - points[i - 1][0] > allowed(i)) out.push([points[i - 1][0] + 1, null]);
    out.push(points[i]);
  }
  return out;
}

/** A line series as every time chart draws it: no symbols, gaps left as gaps. */
export function lineSeries(name: string, colour: string | undefined, dashed = false) {
  return {
    name,
    type: 'line',
    showSymbol: false,
    connectNulls: false,
    lineStyle: { width: 1.5, type: dashed ? 'dashed' : 'solid', color: colour },
    itemStyle: colour ? { color: colour } : undefined,
  };
}

/** Axis styling for a value axis. */
export function valueAxis(extra: Record<string, unknown> = {}) {
  return {
    type: 'value',
    axisLabel: { color: MUTED, fontSize: 10, formatter: (v: number) => formatValue(v) },
    nameTextStyle: { color: MUTED },
    splitLine: { lineStyle: { color: GRID_LINE } },
    ...extra,
  };
}
