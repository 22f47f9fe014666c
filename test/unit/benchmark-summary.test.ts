// Issue 11, section 2: the training benchmark's aggregation and findings, on hand-made repetitions.
import { describe, expect, it } from 'vitest';

import type { BenchmarkRepetition } from '../../src-main/api/benchmark-result';
import type { TelemetrySummary } from '../../src-main/api/telemetry';
import { measurementText } from '../../src-main/api/measurement-words';
import type { TrainStepEvent } from '../../src-main/api/training';
import { aggregateRepetitions, findings, measuredPhases, phaseShares, withOther } from '../../src-main/core/stats/benchmark-summary';

const zeroMemory = { weights: 0, gradients: 0, optimizerState: 0, activations: 0, activationGrads: 0, batchData: 0, workspace: 0, total: 0 };
const noTelemetry: TelemetrySummary = { samples: 0, gpuUtilizationMean: null, gpuUtilizationP95: null, gpuMemoryPeakMiB: null, gpuPowerMeanW: null, cpuMean: null, gpu: 'none' };

function rep(i: number, samplesPerSec: number, steady: number, wall: number, named: Partial<BenchmarkRepetition['phasesMs']>, telemetry = noTelemetry): BenchmarkRepetition {
  const { phases, exceedsMs } = withOther({ data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0, ...named }, steady);
  return {
    repetition: i,
    samplesPerSec,
    steadyStateMeanMs: steady,
    wallClockMeanMs: wall,
    phasesMs: phases,
    namedPhasesExceedStepMs: exceedsMs,
    telemetry,
    target: { kind: 'engine', phaseSteps: 10, memory: { predicted: zeroMemory, measured: zeroMemory, device: 'cpu' } },
  };
}

function stepEvent(globalStep: number, phasesMs: TrainStepEvent['phasesMs']): TrainStepEvent {
  return { type: 'step', epoch: 1, epochs: 1, step: globalStep, stepsPerEpoch: 100, globalStep, totalSteps: 100, loss: 1, accuracy: null, lr: 0.1, gradNorm: 1, samplesPerSec: 1, phasesMs };
}

const phases = (data: number, forward: number) => ({ data, h2d: 0, forward, loss: 0, backward: 0, optimizer: 0 });

describe('measuredPhases', () => {
  it('averages the step events wholly after the warm-up, weighted by the steps each covers', () => {
    const events = [
      stepEvent(3, phases(100, 100)), // steps 1-3: warm-up
      stepEvent(6, phases(50, 50)), // steps 4-6 straddle a warm-up of 5: left out
      stepEvent(7, phases(1, 3)), // step 7
      stepEvent(10, phases(5, 7)), // steps 8-10
    ];
    const m = measuredPhases(events, 5);
    expect(m.steps).toBe(4);
    expect(m.phases.data).toBeCloseTo((1 + 3 * 5) / 4, 12);
    expect(m.phases.forward).toBeCloseTo((3 + 3 * 7) / 4, 12);
  });

  it('counts no steps when every event lies in the warm-up', () => {
    expect(measuredPhases([stepEvent(2, phases(1, 1))], 5).steps).toBe(0);
  });
});

describe('other and the shares', () => {
  it('other is the step minus the named phases, and the shares sum to 100', () => {
    const { phases: p, exceedsMs } = withOther({ data: 1, h2d: 0.5, forward: 3, loss: 0.5, backward: 4, optimizer: 1 }, 12);
    expect(p.other).toBeCloseTo(2, 12);
    expect(exceedsMs).toBeNull();
    const s = phaseShares(p);
    expect(Object.values(s).reduce((a, b) => a + b, 0)).toBeCloseTo(100, 9);
    expect(s.backward).toBeCloseTo((100 * 4) / 12, 9);
  });

  it('never goes negative: named phases longer than the step give other 0 and say by how much', () => {
    const { phases: p, exceedsMs } = withOther({ data: 2, h2d: 0, forward: 5, loss: 0, backward: 5, optimizer: 0 }, 10);
    expect(p.other).toBe(0);
    expect(exceedsMs).toBeCloseTo(2, 12);
    expect(Object.values(phaseShares(p)).reduce((a, b) => a + b, 0)).toBeCloseTo(100, 9);
  });
});

describe('aggregateRepetitions', () => {
  const reps = [rep(1, 1000, 10, 12, { forward: 4, backward: 5 }), rep(2, 1100, 9, 11, { forward: 4, backward: 4 }), rep(3, 900, 11, 13, { forward: 5, backward: 5 })];
  const a = aggregateRepetitions(reps, 937);

  it('gives the median samples/s with a bootstrap interval that brackets it', () => {
    expect(a.samplesPerSecCi.median).toBe(1000);
    expect(a.samplesPerSecCi.low).toBeLessThanOrEqual(1000);
    expect(a.samplesPerSecCi.high).toBeGreaterThanOrEqual(1000);
    expect(a.samplesPerSecCi.low).toBeGreaterThanOrEqual(900);
    expect(a.samplesPerSecCi.high).toBeLessThanOrEqual(1100);
  });

  it('predicts the epoch time from both step-time figures', () => {
    expect(a.steadyStateMeanMs).toBeCloseTo(10, 12);
    expect(a.wallClockMeanMs).toBeCloseTo(12, 12);
    expect(a.predictedEpochSeconds.fromSteadyState).toBeCloseTo(9.37, 9);
    expect(a.predictedEpochSeconds.fromWallClock).toBeCloseTo(11.244, 9);
  });

  it('phases are means over the repetitions, other the steady step minus them', () => {
    expect(a.phasesMs.forward).toBeCloseTo(13 / 3, 12);
    expect(a.phasesMs.other).toBeCloseTo(10 - 13 / 3 - 14 / 3, 12);
    expect(Object.values(a.phasesPercent).reduce((x, y) => x + y, 0)).toBeCloseTo(100, 9);
  });

  it('refuses no repetitions', () => {
    expect(() => aggregateRepetitions([], 1)).toThrow(/no repetitions/);
  });
});

describe('findings', () => {
  const inputs = (reps: BenchmarkRepetition[], device = 'cpu', measuredBytes = 0, deviceTotalBytes: number | null = null) => ({
    aggregate: aggregateRepetitions(reps, 100),
    device,
    repeat: reps.length,
    measuredBytes,
    deviceTotalBytes,
  });

  it('a data-wait-dominated benchmark says the loader is the bottleneck, naming the share', () => {
    const reps = [1, 2, 3].map((i) => rep(i, 500 + i, 20, 21, { data: 12, forward: 3, backward: 4 }));
    const f = findings(inputs(reps));
    const loader = f.find((x) => x.measurement.name === 'phasesPercent.data');
    expect(loader?.severity).toBe('warning');
    expect(loader?.measurement.value).toBeCloseTo(60, 9);
    expect(loader?.text).toContain('60.0% of the step');
    expect(loader?.text).toContain('the loader is the bottleneck');
  });

  it('a compute-bound CPU benchmark with a small warm-up gap has no findings', () => {
    const reps = [1, 2, 3].map((i) => rep(i, 1000 + i, 10, 10.5, { data: 0.2, forward: 4, backward: 5 }));
    expect(findings(inputs(reps))).toEqual([]);
  });

  it('names a wall-clock mean more than 2x the steady state, with both epoch predictions', () => {
    const reps = [1, 2, 3].map((i) => rep(i, 1000 + i, 2, 26.8, { forward: 1 }));
    const gap = findings(inputs(reps)).find((x) => x.measurement.name === 'stepTime.wallClockToSteadyRatio');
    expect(gap?.measurement.value).toBeCloseTo(13.4, 9);
    expect(gap?.text).toContain('13.4x');
    expect(gap?.text).toContain('0.2 s');
    expect(gap?.text).toContain('2.7 s');
  });

  it('on a GPU: low utilisation, H2D share and memory headroom', () => {
    const t = { ...noTelemetry, samples: 10, gpuUtilizationMean: 41, gpu: 'H100' };
    const reps = [1, 2, 3].map((i) => rep(i, 1000 + i, 10, 11, { h2d: 2, forward: 3, backward: 4 }, t));
    const f = findings(inputs(reps, 'cuda:0', 76e9, 80e9));
    expect(f.find((x) => x.measurement.name === 'telemetry.gpuUtilizationMean')?.measurement.value).toBe(41);
    expect(f.find((x) => x.measurement.name === 'phasesPercent.h2d')?.measurement.value).toBeCloseTo(20, 9);
    const headroom = f.find((x) => x.measurement.name === 'memory.headroom');
    expect(headroom?.severity).toBe('warning');
    expect(headroom?.measurement.value).toBeCloseTo(5, 9);
    // The same utilisation on the CPU is no finding: there is no GPU to idle.
    expect(findings(inputs(reps)).some((x) => x.measurement.name === 'telemetry.gpuUtilizationMean')).toBe(false);
  });

  it('says when the named phases overran the step, and when repetitions are too few or disagree', () => {
    const over = findings(inputs([rep(1, 1000, 10, 11, { forward: 6, backward: 6 })]));
    expect(over.find((x) => x.measurement.name === 'namedPhasesExceedStepMs')?.measurement.value).toBeCloseTo(2, 9);
    expect(over.find((x) => x.measurement.name === 'repeat')?.text).toContain('Only 1 repetition');
    const noisy = findings(inputs([rep(1, 600, 10, 11, { forward: 5 }), rep(2, 1000, 10, 11, { forward: 5 }), rep(3, 1400, 10, 11, { forward: 5 })]));
    expect(noisy.find((x) => x.measurement.name === 'samplesPerSecCi.widthPercent')?.measurement.value).toBeGreaterThan(10);
  });
});

describe("a finding's measurement beside its text", () => {
  it('is its label and value, or the value alone where the unit is the label', () => {
    expect(measurementText({ name: 'repeat', value: 2, unit: 'repetitions' })).toBe('2 repetitions');
    expect(measurementText({ name: 'phasesMs.data', value: 3.25, unit: 'ms' })).toBe('waiting for data, per step: 3.25 ms');
  });
});
