import type { TelemetrySample, TelemetrySummary } from '../../api/telemetry';
import { integratePower } from './energy';

function mean(xs: number[]): number | null {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}

function p95(xs: number[]): number | null {
  if (!xs.length) return null;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.round(0.95 * (sorted.length - 1)))];
}

/** The figures a run's result carries: how busy the GPU was, peak memory, power, CPU. */
export function summarize(samples: TelemetrySample[], gpuState: string): TelemetrySummary {
  const util: number[] = [];
  const power: number[] = [];
  const cpu: number[] = [];
  let peak: number | null = null;
  const names = new Set<string>();
  for (const s of samples) {
    const u = s.gpus.map((g) => g.utilizationGpu).filter((v): v is number => v !== null);
    if (u.length) util.push(u.reduce((a, b) => a + b, 0) / u.length);
    const p = s.gpus.map((g) => g.powerDrawW).filter((v): v is number => v !== null);
    if (p.length) power.push(p.reduce((a, b) => a + b, 0));
    for (const g of s.gpus) {
      if (g.memoryUsedMiB !== null) peak = Math.max(peak ?? 0, g.memoryUsedMiB);
      if (g.name) names.add(g.name);
    }
    if (s.host.cpuPerCore.length) cpu.push(s.host.cpuPerCore.reduce((a, b) => a + b, 0) / s.host.cpuPerCore.length);
  }
  const energy = integratePower(samples);
  return {
    samples: samples.length,
    gpuUtilizationMean: mean(util),
    gpuUtilizationP95: p95(util),
    gpuMemoryPeakMiB: peak,
    gpuPowerMeanW: mean(power),
    gpuEnergyJ: energy?.joules ?? null,
    gpuEnergySeconds: energy?.seconds ?? null,
    cpuMean: mean(cpu),
    gpu: names.size ? [...names].join(', ') : gpuState,
  };
}
