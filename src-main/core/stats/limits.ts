import type { Limits } from '../../api/optimise';

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

function floor(stepMs: number | null, samplesPerStep: number, baselineStepMs: number, derivation: string) {
  return {
    stepMs,
    samplesPerSec: stepMs !== null && stepMs > 0 ? (1000 * samplesPerStep) / stepMs : null,
    baselineOverFloor: stepMs !== null && stepMs > 0 ? baselineStepMs / stepMs : null,
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
    ? `The ${slowest[0]} floor is the highest: no setting of this model and data can step faster than ${fmt(slowest[1])} ms (${fmt((1000 * n) / slowest[1])} samples/s); the baseline's ${fmt(x.baselineStepMs)} ms step is ${fmt(x.baselineStepMs / slowest[1])}x that floor.`
    : 'No floor could be measured on this machine.';
  return { compute, read, h2d, floorStepMs: slowest ? slowest[1] : null, summary };
}
