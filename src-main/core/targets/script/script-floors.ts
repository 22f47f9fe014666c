import type { ScriptFloors } from '../../../api/script-target';
import { TRAINING_FLOPS_PER_FORWARD } from '../../stats/limits';

/** What the probe measured for a script's floors; a null says the reason in the matching `...Missing`. */
export interface ScriptFloorInputs {
  /** The measured steady-state step (ms), per rank. */
  stepMs: number;
  /** Samples per optimizer step on one rank (every micro-batch's, with accumulation); null when the probe saw none. */
  samplesPerStep: number | null;
  /** Batches per optimizer step: 1, or the micro-batches of an accumulating script (each one copied and computed). */
  batchesPerStep?: number;
  /** The probe's count of forward FLOPs per sample; null with flopsMissing. */
  forwardFlopsPerSample: number | null;
  flopsMissing: string;
  peak: { gflops: number; shape: string; how: string } | null;
  peakMissing: string;
  /** One batch's pinned host-to-device copy, the best of the launches; null with copyMissing. */
  copy: { bytesPerBatch: number; seconds: number; how: string } | null;
  copyMissing: string;
}

// Counts exactly; rates and times to three significant digits however small (a GPU's floors are often microseconds).
const fmt = (x: number) => x.toLocaleString('en-US', Number.isInteger(x) ? {} : { maximumSignificantDigits: 3 });

/** Why a script has no data floor: the engine's read floor rests on the files it reads, which the probe cannot name. */
export const SCRIPT_DATA_FLOOR_MISSING =
  "not measured: the probe does not know which files the script's loader reads, so no read rate is measured (the data wait per step is what the loader cost, not a floor)";

/** Why a CPU script has no copy floor. */
export const CPU_COPY_MISSING = 'the script trains on the CPU: it copies nothing to a device';

function floor(stepMs: number | null, samplesPerStep: number | null, measuredStepMs: number, derivation: string) {
  const measured = stepMs !== null && stepMs > 0;
  return {
    stepMs,
    samplesPerSec: measured && samplesPerStep !== null ? (1000 * samplesPerStep) / stepMs : null,
    baselineOverFloor: measured ? measuredStepMs / stepMs : null,
    derivation,
  };
}

/**
 * A script's floors on one optimizer step, as the engine's limits give them (physicalLimits): arithmetic at torch's
 * measured matmul rate, the batch copied at its measured pinned rate. A floor is a bound, not a prediction.
 */
export function scriptFloors(x: ScriptFloorInputs): ScriptFloors {
  const n = x.samplesPerStep;
  const k = Math.max(1, x.batchesPerStep ?? 1);
  const samples = k > 1 && n !== null ? `${n} samples per optimizer step (${k} micro-batches of ${fmt(n / k)})` : `${n} samples`;
  const flopsPerStep = x.forwardFlopsPerSample !== null && n !== null ? TRAINING_FLOPS_PER_FORWARD * x.forwardFlopsPerSample * n : null;
  const computeMs = flopsPerStep !== null && x.peak ? (flopsPerStep / (x.peak.gflops * 1e9)) * 1000 : null;
  const computeWhy =
    x.forwardFlopsPerSample === null
      ? `not measured: ${x.flopsMissing}`
      : n === null
        ? 'not measured: the probe saw no batch size'
        : !x.peak
          ? `not measured: ${x.peakMissing}`
          : `${TRAINING_FLOPS_PER_FORWARD} x ${fmt(x.forwardFlopsPerSample)} forward FLOPs/sample (an estimate) x ${samples} = ${fmt(flopsPerStep ?? 0)} FLOPs per step at ${fmt(x.peak.gflops)} GFLOP/s (${x.peak.how}, ${x.peak.shape}) = ${fmt(computeMs ?? 0)} ms`;
  const compute = {
    ...floor(computeMs, n, x.stepMs, computeWhy),
    trainingFlopsPerStep: flopsPerStep,
    peakGflops: x.peak?.gflops ?? null,
    peakShape: x.peak?.shape ?? null,
  };
  const copyMs = x.copy ? 1000 * x.copy.seconds * k : null;
  const gbPerSec = x.copy ? x.copy.bytesPerBatch / x.copy.seconds / 1e9 : null;
  const copy = {
    ...floor(copyMs, n, x.stepMs, x.copy ? `${k > 1 ? `${k} micro-batches x ` : ''}${fmt(x.copy.bytesPerBatch)} bytes per batch at ${fmt(gbPerSec ?? 0)} GB/s (${x.copy.how}) = ${fmt(copyMs ?? 0)} ms` : `not measured: ${x.copyMissing}`),
    bytesPerBatch: x.copy?.bytesPerBatch ?? null,
    gbPerSec,
  };
  const data = floor(null, n, x.stepMs, SCRIPT_DATA_FLOOR_MISSING);
  const floors: [string, number | null][] = [
    ['compute', compute.stepMs],
    ['host-to-device copy', copy.stepMs],
  ];
  const measured = floors.filter((f): f is [string, number] => f[1] !== null && f[1] > 0);
  const slowest = measured.length ? measured.reduce((a, b) => (b[1] > a[1] ? b : a)) : null;
  const summary = slowest
    ? `The ${slowest[0]} floor is the highest measured: this script cannot step faster than ${fmt(slowest[1])} ms${n !== null ? ` (${fmt((1000 * n) / slowest[1])} samples/s per rank)` : ''}; its ${fmt(x.stepMs)} ms step is ${fmt(x.stepMs / slowest[1])}x that floor.`
    : 'No floor could be measured for this script.';
  return { stepMs: x.stepMs, compute, data, copy, floorStepMs: slowest ? slowest[1] : null, summary };
}
