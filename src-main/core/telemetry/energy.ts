import type { TelemetrySample, TelemetrySummary } from '../../api/telemetry';

/**
 * The GPUs' energy over a window of samples: their summed power draw integrated by the trapezoid rule over the
 * samples' own times (they are not evenly spaced when the sampler lags), and the seconds it spans. Null with fewer
 * than two samples that report power: one reading spans no time.
 */
export function integratePower(samples: readonly TelemetrySample[]): { joules: number; seconds: number } | null {
  const points: [number, number][] = [];
  for (const s of samples) {
    const watts = s.gpus.map((g) => g.powerDrawW).filter((v): v is number => v !== null && Number.isFinite(v));
    if (watts.length) points.push([s.t, watts.reduce((a, b) => a + b, 0)]);
  }
  points.sort((a, b) => a[0] - b[0]);
  if (points.length < 2) return null;
  let joules = 0;
  for (let i = 1; i < points.length; i++) joules += ((points[i][0] - points[i - 1][0]) / 1000) * ((points[i][1] + points[i - 1][1]) / 2);
  const seconds = (points[points.length - 1][0] - points[0][0]) / 1000;
  return seconds > 0 ? { joules, seconds } : null;
}

/** Joules per sample at a throughput, from a window's integrated power: the mean power over the samples per second. */
export function energyPerSample(t: TelemetrySummary, samplesPerSec: number): { energy: { joulesPerSample: number; samplesPerJoule: number; meanPowerW: number; seconds: number } | null; missing: string | null } {
  if (t.gpuEnergyJ == null || t.gpuEnergySeconds == null || !(t.gpuEnergySeconds > 0)) {
    if (t.samples === 1 && t.gpuPowerMeanW !== null) return { energy: null, missing: 'one telemetry sample fell in the measured steps, and energy needs two (one is taken every 0.2 to 0.5 s): measure more steps' };
    return { energy: null, missing: t.samples ? `no GPU power readings over the measured steps (${t.gpu})` : 'no telemetry sample fell in the measured steps' };
  }
  const meanPowerW = t.gpuEnergyJ / t.gpuEnergySeconds;
  const joulesPerSample = meanPowerW / samplesPerSec;
  return { energy: { joulesPerSample, samplesPerJoule: 1 / joulesPerSample, meanPowerW, seconds: t.gpuEnergySeconds }, missing: null };
}

/** Why a CPU target has no energy figure: the GPUs' power is not its energy, and the CPU's is not read. */
export const CPU_ENERGY_MISSING = "the target trains on the CPU: the GPUs' power is not its energy, and the CPU's own is not read";

/** Samples per joule of GPU energy over one repetition's window, or why there is none (a CPU target, no power readings). */
export function repetitionEnergy(t: TelemetrySummary, samplesPerSec: number, device: string): { samplesPerJoule: number | null; energyMissing: string | null } {
  if (!device.startsWith('cuda')) return { samplesPerJoule: null, energyMissing: CPU_ENERGY_MISSING };
  const { energy, missing } = energyPerSample(t, samplesPerSec);
  return { samplesPerJoule: energy?.samplesPerJoule ?? null, energyMissing: missing };
}
