import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { runTelemetryCharts } from '../../src-main/api/charts/telemetry-charts';
import type { GpuSample, TelemetrySample } from '../../src-main/api/telemetry';
import { parseNvidiaSmiLine } from '../../src-main/core/telemetry/nvidia-smi-parser';

const host = (load: number): TelemetrySample['host'] => ({
  cpuPerCore: [load, load / 2],
  memUsedBytes: 1,
  memAvailableBytes: 1,
  memTotalBytes: 2,
  swapUsedBytes: 0,
  swapTotalBytes: 0,
  diskReadBytesPerSec: null,
  diskWriteBytesPerSec: null,
  engineHost: null,
});

/** Three GPUs as a real nvidia-smi printed them. */
function gpus(): GpuSample[] {
  return readFileSync('test/fixtures/nvidia-smi/multi-gpu.txt', 'utf8')
    .split('\n')
    .map(parseNvidiaSmiLine)
    .flatMap((p) => (p.kind === 'gpu' ? [p.sample] : []))
    // The fixture holds two samples per GPU: one sample's worth.
    .filter((s, i, all) => all.findIndex((o) => o.index === s.index) === i);
}

describe('run telemetry charts', () => {
  it('says why a CPU run has no GPU charts and still charts the host CPU', () => {
    const samples = [0, 200, 400].map((t, i) => ({ t: 1_000_000 + t, gpus: [], host: host(50 + i * 10) }));
    const { charts, missing } = runTelemetryCharts(samples);
    expect(charts.map((c) => c.id)).toEqual(['host-cpu']);
    expect(missing.join(' ')).toMatch(/No GPU was sampled/);
    // Mean of the per-core means (37.5, 45, 52.5).
    expect(charts[0].label).toContain('45 %');
  });

  it('draws one series per GPU on the run timeline, and says when there is nothing at all', () => {
    const g = gpus();
    expect(g.length).toBeGreaterThan(1);
    const samples = [0, 500, 1000].map((t) => ({ t: 5_000 + t, gpus: g, host: host(10) }));
    const { charts } = runTelemetryCharts(samples);
    const util = charts.find((c) => c.id === 'gpu-utilization')!;
    const series = (util.option as { series: { name: string; data: [number, number | null][] }[] }).series;
    expect(series.map((s) => s.name)).toEqual(g.map((x) => `GPU ${x.index}`));
    expect(series[0].data.map((p) => p[0])).toEqual([0, 0.5, 1]);
    expect(series[0].data[0][1]).toBe(g[0].utilizationGpu);
    expect(runTelemetryCharts([]).missing).toEqual(['No telemetry was recorded for this run.']);
    // One sample has no course over time: words, not empty axes.
    expect(runTelemetryCharts(samples.slice(0, 1))).toEqual({ charts: [], missing: ['One telemetry sample was recorded (the run was shorter than the sampling interval): too few to chart over time.'] });
  });
});
