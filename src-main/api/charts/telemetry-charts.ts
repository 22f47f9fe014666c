// Charts of the telemetry a run recorded (its own timeline, not the live window):
// GPU utilisation, memory and power per GPU, and the host's CPU load.
import type { EChartsCoreOption } from 'echarts/core';

import type { TelemetrySample } from '../telemetry';
import { colourFor, formatValue, lineSeries, titleAndLegend, tooltip, valueAxis, withGaps, type Point } from './theme';

export interface RunTelemetryChart {
  id: 'gpu-utilization' | 'gpu-memory' | 'gpu-power' | 'host-cpu';
  title: string;
  unit: string;
  option: EChartsCoreOption;
  /** What a screen reader announces, and a report's alt text. */
  label: string;
}

export interface RunTelemetryCharts {
  charts: RunTelemetryChart[];
  /** A line per chart left out, saying why (no samples, no GPU, no readings). */
  missing: string[];
}

type Metric = { id: RunTelemetryChart['id']; title: string; unit: string; max?: number; read: (g: TelemetrySample['gpus'][number]) => number | null };

const GPU_METRICS: Metric[] = [
  { id: 'gpu-utilization', title: 'GPU utilisation', unit: '%', max: 100, read: (g) => g.utilizationGpu },
  { id: 'gpu-memory', title: 'GPU memory used', unit: 'MiB', read: (g) => g.memoryUsedMiB },
  { id: 'gpu-power', title: 'GPU power', unit: 'W', read: (g) => g.powerDrawW },
];

/** Seconds from the first sample: a run's own timeline reads better than wall-clock times. */
function lineChart(title: string, unit: string, series: { name: string; colour: string; points: Point[] }[], gapMs: number, max?: number): EChartsCoreOption {
  const head = titleAndLegend(`${title} (${unit})`, series.length > 1);
  return {
    animation: false,
    title: head.title,
    legend: head.legend,
    tooltip: tooltip(unit),
    grid: { left: 52, right: 16, top: head.gridTop, bottom: 36 },
    xAxis: valueAxis({ name: 's', nameLocation: 'middle', nameGap: 22, min: 0 }),
    yAxis: valueAxis({ min: 0, max }),
    series: series.map((s) => ({ ...lineSeries(s.name, s.colour), data: withGaps(s.points, gapMs) })),
  };
}

/** The typical gap between samples, times three: a longer pause is drawn as a gap. */
function gapFor(samples: readonly TelemetrySample[]): number {
  if (samples.length < 2) return Infinity;
  const dts = samples.slice(1).map((s, i) => s.t - samples[i].t).sort((a, b) => a - b);
  return 3 * dts[Math.floor(dts.length / 2)] / 1000;
}

export function runTelemetryCharts(samples: readonly TelemetrySample[]): RunTelemetryCharts {
  if (samples.length === 0) return { charts: [], missing: ['No telemetry was recorded for this run.'] };
  // One sample draws empty axes (a UI walk saw a blank chart): said in words, as the ADR says it.
  if (samples.length === 1) return { charts: [], missing: ['One telemetry sample was recorded (the run was shorter than the sampling interval): too few to chart over time.'] };
  const t0 = samples[0].t;
  const at = (s: TelemetrySample) => (s.t - t0) / 1000;
  const gap = gapFor(samples);
  const charts: RunTelemetryChart[] = [];
  const missing: string[] = [];
  const gpuIndices = [...new Set(samples.flatMap((s) => s.gpus.map((g) => g.index)))].sort((a, b) => a - b);
  if (gpuIndices.length === 0) missing.push('No GPU was sampled during this run (it ran on the CPU, or nvidia-smi was not available), so there are no GPU charts.');
  for (const m of gpuIndices.length ? GPU_METRICS : []) {
    const series = gpuIndices.map((index) => ({
      name: `GPU ${index}`,
      colour: colourFor(index),
      points: samples.map((s): Point => [at(s), m.read(s.gpus.find((g) => g.index === index) ?? ({} as never)) ?? null]),
    }));
    if (!series.some((s) => s.points.some((p) => p[1] !== null))) {
      missing.push(`${m.title}: the driver reported no values during this run.`);
      continue;
    }
    const means = series.map((s) => {
      const vals = s.points.map((p) => p[1]).filter((v): v is number => v !== null);
      return `${s.name} mean ${formatValue(vals.reduce((a, b) => a + b, 0) / Math.max(1, vals.length), m.unit)}`;
    });
    charts.push({ id: m.id, title: m.title, unit: m.unit, option: lineChart(m.title, m.unit, series, gap, m.max), label: `${m.title} over the run: ${means.join(', ')}` });
  }
  const cpu = samples.map((s): Point => [at(s), s.host.cpuPerCore.length ? s.host.cpuPerCore.reduce((a, b) => a + b, 0) / s.host.cpuPerCore.length : null]);
  if (cpu.some((p) => p[1] !== null)) {
    const vals = cpu.map((p) => p[1]).filter((v): v is number => v !== null);
    const mean = vals.reduce((a, b) => a + b, 0) / vals.length;
    charts.push({
      id: 'host-cpu',
      title: 'Host CPU load',
      unit: '%',
      option: lineChart('Host CPU load, all cores', '%', [{ name: 'CPU', colour: colourFor(1), points: cpu }], gap, 100),
      label: `Host CPU load over the run, all cores: mean ${formatValue(mean, '%')}`,
    });
  } else {
    missing.push('Host CPU load: no readings during this run.');
  }
  return { charts, missing };
}
