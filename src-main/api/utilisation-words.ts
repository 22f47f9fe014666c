import type { Utilisation } from './benchmark';
import type { BenchmarkResult } from './benchmark-result';
import type { Limit } from './optimise';
import type { ScriptFloors } from './script-target';

// How a benchmark's arithmetic and energy read, the same in the CLI, the report and the app.

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** One line for the CLI and the report. */
export function utilisationText(u: Utilisation): string {
  const measured = u.measured
    ? u.measured.mfu === null
      ? `measured peak ${Math.round(u.measured.gflops)} GFLOP/s (${u.measured.how}, ${u.measured.shape})`
      : `${pct(u.measured.mfu)} of the ${Math.round(u.measured.gflops)} GFLOP/s measured on this device (${u.measured.how}, ${u.measured.shape})`
    : `no measured peak: ${u.measuredMissing}`;
  const sheet = u.datasheet ? (u.datasheet.mfu === null ? '' : `; ${pct(u.datasheet.mfu)} of the ${u.datasheet.device} datasheet's ${u.datasheet.gflops / 1000} TFLOP/s ${u.datasheet.precision}`) : '; no datasheet peak (a CPU, or a device not in the table)';
  const problems = u.problems.length ? `; ${u.problems.join('; ')}` : '';
  return `${u.achievedGflops.toPrecision(3)} GFLOP/s of model arithmetic: ${measured}${sheet}${problems}`;
}

/** One line for a benchmark's GPU energy per sample, or why it has none; null in runs recorded before energy was. */
export function energyText(r: Pick<BenchmarkResult, 'energy' | 'energyMissing'>): string | null {
  if (r.energy) {
    return `${(r.energy.joulesPerSample * 1000).toPrecision(3)} mJ of GPU energy per sample (${r.energy.samplesPerJoule.toPrecision(3)} samples/J) at ${r.energy.meanPowerW.toFixed(0)} W mean GPU power over ${r.energy.seconds.toFixed(1)} s of measured steps`;
  }
  return r.energyMissing ? `not measured: ${r.energyMissing}` : null;
}

/** What a script's power window spans: the telemetry of a launch runs on after its measured steps until it exits. */
export const SCRIPT_ENERGY_WINDOW =
  "the GPU power is averaged from the first measured step to the launch's end (the probe's after-step measurements and the exit included): in a short run that tail weighs in, so measure more steps for the training's own figure";

/** A script's floors as rows, in the order the engine's limits give them (compute, copy, data), for the CLI, the report and the app. */
export function floorRows(f: ScriptFloors): { name: 'compute' | 'copy' | 'data'; limit: Limit; stepMs: string; over: string; derivation: string }[] {
  return (
    [
      ['compute', f.compute],
      ['copy', f.copy],
      ['data', f.data],
    ] as const
  ).map(([name, l]) => ({
    name,
    limit: l,
    stepMs: l.stepMs === null ? 'n/a' : `${l.stepMs.toLocaleString('en-US', { maximumSignificantDigits: 3 })} ms`,
    over: l.baselineOverFloor === null ? '' : `step ${l.baselineOverFloor.toFixed(1)}x`,
    derivation: l.derivation,
  }));
}
