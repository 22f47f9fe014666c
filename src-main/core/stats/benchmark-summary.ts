import type { BenchmarkPhases, Finding } from '../../api/benchmark';
import type { BenchmarkRepetition } from '../../api/benchmark-result';
import { PHASE_NAMES, PHASE_NAMES_WITH_OTHER } from '../../api/benchmark';
import { intervalLevel } from '../../api/order-interval';
import type { TelemetrySummary } from '../../api/telemetry';
import type { TrainStepEvent } from '../../api/training';
import type { Interval } from './medians';
import { medianInterval } from './medians';

/** Thresholds behind the findings, named once. */
export const THRESHOLDS = {
  /** Data wait above this share of the step: the loader, not the model, sets the pace. */
  dataWaitShare: 0.1,
  /** Host-to-device copies above this share: the step waits for copies that could overlap. */
  h2dShare: 0.1,
  /** GPU utilisation below this (percent) over the measured window. */
  gpuUtilization: 70,
  /** Less free device memory than this share: the next larger batch (or a longer sequence) may not fit. */
  lowHeadroom: 0.1,
  /** More free than this: room for a larger batch. */
  highHeadroom: 0.5,
  /** Wall-clock mean this many times the steady-state mean: warm-up dominates, and a steady-only estimate misleads. */
  warmupGap: 2,
  /** A CI wider than this share of the median: the repetitions disagree. */
  noisyCi: 0.1,
} as const;

/**
 * Milliseconds per step in each named phase over the step events wholly after
 * the warm-up. An event covers the steps since the previous one (its phases are
 * their mean), so windows are weighted by their step count.
 */
export function measuredPhases(events: readonly TrainStepEvent[], warmupSteps: number): { phases: Omit<BenchmarkPhases, 'other'>; steps: number } {
  const sum = { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0 };
  let steps = 0;
  let previous = 0;
  for (const e of [...events].sort((a, b) => a.globalStep - b.globalStep)) {
    const window = e.globalStep - previous;
    if (previous >= warmupSteps && window > 0) {
      for (const p of PHASE_NAMES) sum[p] += e.phasesMs[p] * window;
      steps += window;
    }
    previous = e.globalStep;
  }
  if (steps > 0) for (const p of PHASE_NAMES) sum[p] /= steps;
  return { phases: sum, steps };
}

/** Adds `other` = step minus the named phases; never negative, and says by how much the named phases overran. */
export function withOther(named: Omit<BenchmarkPhases, 'other'>, stepMs: number): { phases: BenchmarkPhases; exceedsMs: number | null } {
  const total = PHASE_NAMES.reduce((s, p) => s + named[p], 0);
  const other = stepMs - total;
  return { phases: { ...named, other: Math.max(0, other) }, exceedsMs: other < 0 ? -other : null };
}

/** Each phase's share of the step in percent (of the larger of the step and the named phases, so shares sum to 100). */
export function phaseShares(phases: BenchmarkPhases): BenchmarkPhases {
  const total = PHASE_NAMES_WITH_OTHER.reduce((s, p) => s + phases[p], 0);
  const out = { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0, other: 0 };
  if (total > 0) for (const p of PHASE_NAMES_WITH_OTHER) out[p] = (100 * phases[p]) / total;
  return out;
}

const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/**
 * Telemetry of several windows as one: means weighted by each window's samples (the mean over every sample, as a
 * chart of them shows it: an unweighted mean of means once read 92.4% beside the chart's 93.1%), the highest
 * peaks, samples added up.
 */
export function mergeTelemetry(parts: readonly TelemetrySummary[]): TelemetrySummary {
  const values = (pick: (t: TelemetrySummary) => number | null) => parts.map(pick).filter((x): x is number => x !== null);
  const meanOf = (pick: (t: TelemetrySummary) => number | null) => {
    const known = parts.filter((t) => pick(t) !== null);
    if (!known.length) return null;
    const weight = (t: TelemetrySummary) => Math.max(1, t.samples);
    return known.reduce((s, t) => s + (pick(t) as number) * weight(t), 0) / known.reduce((s, t) => s + weight(t), 0);
  };
  const maxOf = (pick: (t: TelemetrySummary) => number | null) => (values(pick).length ? Math.max(...values(pick)) : null);
  return {
    samples: parts.reduce((s, t) => s + t.samples, 0),
    gpuUtilizationMean: meanOf((t) => t.gpuUtilizationMean),
    gpuUtilizationP95: maxOf((t) => t.gpuUtilizationP95),
    gpuMemoryPeakMiB: maxOf((t) => t.gpuMemoryPeakMiB),
    gpuPowerMeanW: meanOf((t) => t.gpuPowerMeanW),
    // Energy adds up over the windows where every one measured it; one without makes the sum unknown.
    gpuEnergyJ: parts.length && parts.every((t) => t.gpuEnergyJ != null) ? parts.reduce((s, t) => s + (t.gpuEnergyJ ?? 0), 0) : null,
    gpuEnergySeconds: parts.length && parts.every((t) => t.gpuEnergySeconds != null) ? parts.reduce((s, t) => s + (t.gpuEnergySeconds ?? 0), 0) : null,
    cpuMean: meanOf((t) => t.cpuMean),
    gpu: parts[0]?.gpu ?? 'no telemetry',
  };
}

export interface BenchmarkAggregate {
  samplesPerSecCi: Interval;
  steadyStateMeanMs: number;
  wallClockMeanMs: number;
  predictedEpochSeconds: { fromSteadyState: number; fromWallClock: number };
  phasesMs: BenchmarkPhases;
  phasesPercent: BenchmarkPhases;
  namedPhasesExceedStepMs: number | null;
  telemetry: TelemetrySummary;
}

/**
 * Repetitions as one result. Every repetition measures the same number of steps,
 * so means of their means are means over every measured step; samples/s gets a
 * median and a bootstrap interval, because the repetitions are few.
 */
export function aggregateRepetitions(reps: readonly Pick<BenchmarkRepetition, 'samplesPerSec' | 'steadyStateMeanMs' | 'wallClockMeanMs' | 'phasesMs' | 'telemetry'>[], stepsPerEpoch: number): BenchmarkAggregate {
  if (reps.length === 0) throw new RangeError('aggregateRepetitions: no repetitions');
  const steady = mean(reps.map((r) => r.steadyStateMeanMs));
  const wall = mean(reps.map((r) => r.wallClockMeanMs));
  const named = { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0 };
  for (const p of PHASE_NAMES) named[p] = mean(reps.map((r) => r.phasesMs[p]));
  const { phases, exceedsMs } = withOther(named, steady);
  return {
    samplesPerSecCi: medianInterval(reps.map((r) => r.samplesPerSec)),
    steadyStateMeanMs: steady,
    wallClockMeanMs: wall,
    predictedEpochSeconds: { fromSteadyState: (stepsPerEpoch * steady) / 1000, fromWallClock: (stepsPerEpoch * wall) / 1000 },
    phasesMs: phases,
    phasesPercent: phaseShares(phases),
    namedPhasesExceedStepMs: exceedsMs,
    telemetry: mergeTelemetry(reps.map((r) => r.telemetry)),
  };
}

export interface FindingInputs {
  aggregate: BenchmarkAggregate;
  /** 'cpu' or 'cuda:N'. */
  device: string;
  repeat: number;
  /** Peak bytes the engine allocated on the device, and the device's memory (null on the CPU). */
  measuredBytes: number;
  deviceTotalBytes: number | null;
}

const pct = (x: number) => `${x.toFixed(1)}%`;
const ms = (x: number) => `${x.toFixed(2)} ms`;

/** Plain-words findings from the thresholds, each with the number it rests on. */
export function findings(input: FindingInputs): Finding[] {
  const { aggregate: a, device } = input;
  const out: Finding[] = [];
  const step = a.steadyStateMeanMs;
  const share = a.phasesPercent;
  if (share.data > 100 * THRESHOLDS.dataWaitShare) {
    out.push({
      severity: 'warning',
      text: `Data wait is ${pct(share.data)} of the step (${ms(a.phasesMs.data)} of ${ms(step)}): the loader is the bottleneck. Try more loader workers, a deeper prefetch, or a cached dataset.`,
      measurement: { name: 'phasesPercent.data', value: share.data, unit: '%' },
    });
  }
  if (share.h2d > 100 * THRESHOLDS.h2dShare) {
    out.push({
      severity: 'warning',
      text: `Host-to-device copies take ${pct(share.h2d)} of the step (${ms(a.phasesMs.h2d)}): the step waits for its batch. A deeper GPU prefetch lets copies overlap compute.`,
      measurement: { name: 'phasesPercent.h2d', value: share.h2d, unit: '%' },
    });
  }
  const util = a.telemetry.gpuUtilizationMean;
  if (device.startsWith('cuda') && util !== null && util < THRESHOLDS.gpuUtilization) {
    out.push({
      severity: 'warning',
      text: `GPU utilisation averaged ${pct(util)} over the measured steps (below ${THRESHOLDS.gpuUtilization}%): the GPU is waiting. Look at the largest phase outside forward and backward, or raise the batch size.`,
      measurement: { name: 'telemetry.gpuUtilizationMean', value: util, unit: '%' },
    });
  }
  if (input.deviceTotalBytes && input.deviceTotalBytes > 0) {
    const free = 1 - input.measuredBytes / input.deviceTotalBytes;
    const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;
    if (free < THRESHOLDS.lowHeadroom) {
      out.push({
        severity: 'warning',
        text: `Only ${pct(100 * free)} of device memory is free (${gib(input.measuredBytes)} of ${gib(input.deviceTotalBytes)} used): a larger batch or model will run out of memory.`,
        measurement: { name: 'memory.headroom', value: 100 * free, unit: '%' },
      });
    } else if (free > THRESHOLDS.highHeadroom) {
      out.push({
        severity: 'info',
        text: `${pct(100 * free)} of device memory is free (${gib(input.measuredBytes)} of ${gib(input.deviceTotalBytes)} used): there is room for a larger batch.`,
        measurement: { name: 'memory.headroom', value: 100 * free, unit: '%' },
      });
    }
  }
  const gap = step > 0 ? a.wallClockMeanMs / step : 0;
  if (gap > THRESHOLDS.warmupGap) {
    out.push({
      severity: 'warning',
      text: `The wall-clock mean step (${ms(a.wallClockMeanMs)}) is ${gap.toFixed(1)}x the steady-state step (${ms(step)}): warm-up dominates this run, so an epoch estimate from the steady state alone (${a.predictedEpochSeconds.fromSteadyState.toFixed(1)} s) is too low for short runs (${a.predictedEpochSeconds.fromWallClock.toFixed(1)} s from the wall clock).`,
      measurement: { name: 'stepTime.wallClockToSteadyRatio', value: gap, unit: 'x' },
    });
  }
  if (a.namedPhasesExceedStepMs !== null) {
    out.push({
      severity: 'info',
      text: `The named phases add up to ${ms(a.namedPhasesExceedStepMs)} more than the steady-state step: their timers overlap (asynchronous work), so 'other' is shown as 0 and the shares are of the named phases.`,
      measurement: { name: 'namedPhasesExceedStepMs', value: a.namedPhasesExceedStepMs, unit: 'ms' },
    });
  }
  const ci = a.samplesPerSecCi;
  if (input.repeat < 3) {
    out.push({
      severity: 'info',
      text: `Only ${input.repeat} repetition${input.repeat === 1 ? '' : 's'}: the confidence interval of samples/s cannot show the run-to-run noise. Measure 3 repetitions or more.`,
      measurement: { name: 'repeat', value: input.repeat, unit: 'repetitions' },
    });
  } else if (ci.median > 0 && (ci.high - ci.low) / ci.median > THRESHOLDS.noisyCi) {
    const width = (100 * (ci.high - ci.low)) / ci.median;
    out.push({
      severity: 'info',
      text: `The ${intervalLevel(ci)} interval of samples/s is ${pct(width)} of the median wide (${Math.round(ci.low).toLocaleString('en-US')} to ${Math.round(ci.high).toLocaleString('en-US')}): the repetitions disagree, so compare settings only by more than that. More steps or repetitions narrow it.`,
      measurement: { name: 'samplesPerSecCi.widthPercent', value: width, unit: '%' },
    });
  }
  return out;
}

/** Mean training loss over every step the events cover (each event is the mean of the steps since the previous one), or null without events. */
export function meanLoss(events: readonly { globalStep: number; loss: number }[]): number | null {
  let previous = 0;
  let sum = 0;
  for (const e of [...events].sort((a, b) => a.globalStep - b.globalStep)) {
    sum += e.loss * (e.globalStep - previous);
    previous = e.globalStep;
  }
  return previous > 0 && Number.isFinite(sum) ? sum / previous : null;
}
