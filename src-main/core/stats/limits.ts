import { formatValue } from '../../api/charts/theme';
import type { Limits } from '../../api/optimise';
import type { ScriptFloors } from '../../api/script-target';

/** Training does about three forward passes of arithmetic: forward, and backward for inputs and for weights. */
export const TRAINING_FLOPS_PER_FORWARD = 3;

export interface LimitInputs {
  /** Forward FLOPs per sample, from the engine's model spec. */
  flopsPerSample: number;
  /** Training FLOPs a step must do per sample (padding taps and input gradients nothing needs left out); absent: 3x the forward. */
  trainingFlopsPerSample?: number;
  /** Samples per optimizer step (batch x accumulation). */
  samplesPerStep: number;
  /** Measured matrix-multiply rate on the target's device, and the shape it was measured at; null when not measured. */
  gemm: { gflops: number; shape: string; how: string } | null;
  gemmMissing: string;
  bytesPerSample: number;
  /** Measured sequential read rate of the files the target reads (MB/s). */
  readMBps: number | null;
  readWhat: string;
  /** Measured host-to-device copy rate (MB/s); null with the reason in h2dMissing. */
  h2dMBps: number | null;
  /** How the copy rate was measured (pinned copies of one micro-batch; "emulated" where no GPU ran them). */
  h2dHow?: string | null;
  h2dMissing: string;
  baselineStepMs: number;
}

const fmt = (x: number, digits = 3) => Number(x.toPrecision(digits)).toLocaleString('en-US');

/** A floor as both targets report it: its step, the samples/s it allows, and how far the measured step is above it. */
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
 * The floors the hardware sets on one optimizer step, each from a measured
 * rate: arithmetic at the measured GEMM rate, reading the batch at the measured
 * read rate, copying it at the measured copy rate. A floor is a bound, not a
 * prediction: the step cannot be faster than its slowest floor.
 */
export function physicalLimits(x: LimitInputs): Limits {
  const n = x.samplesPerStep;
  const perSample = x.trainingFlopsPerSample ?? TRAINING_FLOPS_PER_FORWARD * x.flopsPerSample;
  const flopsPerStep = perSample * n;
  const counted =
    x.trainingFlopsPerSample === undefined
      ? `${TRAINING_FLOPS_PER_FORWARD} x ${fmt(x.flopsPerSample)} forward FLOPs/sample`
      : `${fmt(x.trainingFlopsPerSample)} training FLOPs/sample (${TRAINING_FLOPS_PER_FORWARD} x ${fmt(x.flopsPerSample)} forward, less padding taps and the input gradients nothing needs)`;
  const computeMs = x.gemm ? (flopsPerStep / (x.gemm.gflops * 1e9)) * 1000 : null;
  const compute = {
    ...floor(
      computeMs,
      n,
      x.baselineStepMs,
      x.gemm
        ? `${counted} x ${n} samples = ${fmt(flopsPerStep)} FLOPs per step at ${fmt(x.gemm.gflops)} GFLOP/s (${x.gemm.how}, ${x.gemm.shape}) = ${fmt(computeMs ?? 0)} ms`
        : `not measured: ${x.gemmMissing}`,
    ),
    flopsPerSample: x.flopsPerSample,
    gemmGflops: x.gemm?.gflops ?? null,
    gemmShape: x.gemm?.shape ?? null,
  };
  const bytesPerStep = x.bytesPerSample * n;
  const readMs = x.readMBps ? (bytesPerStep / (x.readMBps * 1e6)) * 1000 : null;
  const read = {
    ...floor(
      readMs,
      n,
      x.baselineStepMs,
      x.readMBps
        ? `${fmt(x.bytesPerSample)} bytes/sample x ${n} samples = ${fmt(bytesPerStep)} bytes per step at ${fmt(x.readMBps)} MB/s (measured sequential read of ${x.readWhat}) = ${fmt(readMs ?? 0)} ms`
        : `not measured: the read rate of ${x.readWhat} could not be measured`,
    ),
    bytesPerSample: x.bytesPerSample,
    readMBps: x.readMBps,
  };
  const h2dMs = x.h2dMBps ? (bytesPerStep / (x.h2dMBps * 1e6)) * 1000 : null;
  const h2d = {
    ...floor(h2dMs, n, x.baselineStepMs, x.h2dMBps ? `${fmt(bytesPerStep)} bytes per step at ${fmt(x.h2dMBps)} MB/s host-to-device${x.h2dHow ? ` (${x.h2dHow})` : ''} = ${fmt(h2dMs ?? 0)} ms` : `not measured: ${x.h2dMissing}`),
    h2dMBps: x.h2dMBps,
  };
  const floors = [
    ['compute', compute.stepMs],
    ['read', read.stepMs],
    ['host-to-device', h2d.stepMs],
  ].filter((f): f is [string, number] => f[1] !== null);
  const slowest = floors.length ? floors.reduce((a, b) => (b[1] > a[1] ? b : a)) : null;
  const summary = slowest
    ? `The ${slowest[0]} floor is the highest: no setting of this model and data can step faster than ${fmt(slowest[1])} ms (${formatValue((1000 * n) / slowest[1])} samples/s); the baseline's ${fmt(x.baselineStepMs)} ms step is ${fmt(x.baselineStepMs / slowest[1])}x that floor.`
    : 'No floor could be measured on this machine.';
  return { compute, read, h2d, floorStepMs: slowest ? slowest[1] : null, summary };
}

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

// A script's floors count exactly; rates and times to three significant digits however small (a GPU's floors are often microseconds).
const exact = (x: number) => x.toLocaleString('en-US', Number.isInteger(x) ? {} : { maximumSignificantDigits: 3 });

/** Why a script has no data floor: the engine's read floor rests on the files it reads, which the probe cannot name. */
export const SCRIPT_DATA_FLOOR_MISSING =
  "not measured: the probe does not know which files the script's loader reads, so no read rate is measured (the data wait per step is what the loader cost, not a floor)";

/** Why a CPU script has no copy floor. */
export const CPU_COPY_MISSING = 'the script trains on the CPU: it copies nothing to a device';

/**
 * A script's floors on one optimizer step, as the engine's limits give them (physicalLimits): arithmetic at torch's
 * measured matmul rate, the batch copied at its measured pinned rate. A floor is a bound, not a prediction.
 */
export function scriptFloors(x: ScriptFloorInputs): ScriptFloors {
  const n = x.samplesPerStep;
  const k = Math.max(1, x.batchesPerStep ?? 1);
  const samples = k > 1 && n !== null ? `${n} samples per optimizer step (${k} micro-batches of ${exact(n / k)})` : `${n} samples`;
  const flopsPerStep = x.forwardFlopsPerSample !== null && n !== null ? TRAINING_FLOPS_PER_FORWARD * x.forwardFlopsPerSample * n : null;
  const computeMs = flopsPerStep !== null && x.peak ? (flopsPerStep / (x.peak.gflops * 1e9)) * 1000 : null;
  const computeWhy =
    x.forwardFlopsPerSample === null
      ? `not measured: ${x.flopsMissing}`
      : n === null
        ? 'not measured: the probe saw no batch size'
        : !x.peak
          ? `not measured: ${x.peakMissing}`
          : `${TRAINING_FLOPS_PER_FORWARD} x ${exact(x.forwardFlopsPerSample)} forward FLOPs/sample (an estimate) x ${samples} = ${exact(flopsPerStep ?? 0)} FLOPs per step at ${exact(x.peak.gflops)} GFLOP/s (${x.peak.how}, ${x.peak.shape}) = ${exact(computeMs ?? 0)} ms`;
  const compute = {
    ...floor(computeMs, n, x.stepMs, computeWhy),
    trainingFlopsPerStep: flopsPerStep,
    peakGflops: x.peak?.gflops ?? null,
    peakShape: x.peak?.shape ?? null,
  };
  const copyMs = x.copy ? 1000 * x.copy.seconds * k : null;
  const gbPerSec = x.copy ? x.copy.bytesPerBatch / x.copy.seconds / 1e9 : null;
  const copy = {
    ...floor(copyMs, n, x.stepMs, x.copy ? `${k > 1 ? `${k} micro-batches x ` : ''}${exact(x.copy.bytesPerBatch)} bytes per batch at ${exact(gbPerSec ?? 0)} GB/s (${x.copy.how}) = ${exact(copyMs ?? 0)} ms` : `not measured: ${x.copyMissing}`),
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
    ? `The ${slowest[0]} floor is the highest measured: this script cannot step faster than ${exact(slowest[1])} ms${n !== null ? ` (${formatValue((1000 * n) / slowest[1])} samples/s per rank)` : ''}; its ${exact(x.stepMs)} ms step is ${exact(x.stepMs / slowest[1])}x that floor.`
    : 'No floor could be measured for this script.';
  return { stepMs: x.stepMs, compute, data, copy, floorStepMs: slowest ? slowest[1] : null, summary };
}
