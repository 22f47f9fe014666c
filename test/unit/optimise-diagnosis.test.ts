// Issue 12: the wizard's diagnosis tree, physical limits, candidate changes and presets on measured-looking baselines.
import { formatValue } from '../../src-main/api/charts/theme';
import { describe, expect, it } from 'vitest';

import type { OptimiseBaseline, OptimiseConfig, WizardState } from '../../src-main/api/optimise';
import { OptimiseRequestSchema } from '../../src-main/api/optimise';
import { BenchmarkOptionsSchema } from '../../src-main/api/benchmark';
import { diagnose } from '../../src-main/core/knobs/diagnosis';
import { applyChange, candidateChanges } from '../../src-main/core/knobs/engine-knobs';
import { physicalLimits } from '../../src-main/core/stats/limits';
import { initialState } from '../../src-main/core/targets/engine/resumable-run';
import { WizardLoop } from '../../src-main/core/optimise/wizard-loop';
import type { KnobContext } from '../../src-main/core/knobs/knob';
import { EngineRepetitions } from '../../src-main/core/targets/engine/wizard-repetitions';

const config = (o: object = {}, readFrom: 'cache' | 'source' = 'cache'): OptimiseConfig => ({ options: BenchmarkOptionsSchema.parse(o), readFrom });

/** A baseline whose phases (ms per step) are given; shares follow from them. */
function baseline(phasesMs: Record<string, number>, extra: Partial<OptimiseBaseline> = {}): OptimiseBaseline {
  const phases = { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0, other: 0, ...phasesMs };
  const step = Object.values(phases).reduce((a, b) => a + b, 0);
  const percent = Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, (100 * v) / step])) as typeof phases;
  return {
    config: config(),
    samplesPerSec: { low: 900, median: 1000, high: 1100 },
    repetitions: [950, 1000, 1050, 990, 1010],
    noiseFloor: 0.02,
    stepMs: step,
    phasesMs: phases,
    phasesPercent: percent,
    device: 'cpu',
    cpuMean: 97,
    gpuUtilizationMean: null,
    memoryBytes: 1e8,
    deviceTotalBytes: null,
    meanLoss: 1.5,
    ...extra,
  };
}

const ctx = { device: 'cpu', cpus: 2, recordsPerEpoch: 60_000 };

describe('diagnosis', () => {
  it('says its shares are of the timed phases where they overran the step, so the milliseconds and the share agree', () => {
    // A UI walk's baseline: phases 8.07 ms against a 5.831 ms step; "5.535 ms of 5.831 ms (68.6%)" did not add up.
    const over = baseline({ data: 5.535, forward: 0.617, loss: 0.014, backward: 1.26, optimizer: 0.636 }, { stepMs: 5.831 });
    const d = diagnose(over);
    expect(d.summary).toBe('68.7% of the 8.06 ms its phases were timed at (more than the 5.83 ms step) is waiting for data.');
    expect(d.findings.find((f) => f.id === 'data-wait')?.text).toMatch(/^The step waits 5\.54 ms of the 8\.06 ms its phases were timed at \(more than the 5\.83 ms step\) for data \(68\.7%\)/);
    expect(diagnose(baseline({ data: 6, forward: 2, backward: 1.5, optimizer: 0.5 })).summary).toBe('60.0% of the 10 ms step is waiting for data.');
  });

  it('names a data-bound step from its data wait share, and puts the loader knobs first', () => {
    const b = baseline({ data: 6, forward: 2, backward: 1.5, optimizer: 0.5 }, { config: config({ loaderWorkers: 0, prefetch: 1 }, 'source') });
    const d = diagnose(b);
    expect(d.bound).toBe('data');
    const wait = d.findings.find((f) => f.id === 'data-wait');
    expect(wait?.measurement).toEqual({ name: 'phasesPercent.data', value: 60, unit: '%' });
    expect(wait?.text).toContain('60.0%');
    expect(d.findings.map((f) => f.id)).toContain('reading-source');
    const c = candidateChanges(b.config, d, ctx);
    expect(c.changes.map((x) => x.knob).slice(0, 3)).toEqual(['readFrom', 'loaderWorkers', 'prefetch']);
    // The diagnosis's number in words, not its JSON key (issue 27).
    expect(c.changes[0].hypothesis).toMatch(/\(waiting for data, per step: [\d.]+ ms\)$/);
    expect(c.changes.map((x) => x.hypothesis).join(' ')).not.toMatch(/phases(Ms|Percent)\./);
  });

  it('names a compute-bound step from the arithmetic phases and the CPU load', () => {
    const d = diagnose(baseline({ data: 0.5, forward: 40, loss: 1, backward: 55, optimizer: 3, other: 0.5 }));
    expect(d.bound).toBe('compute');
    const f = d.findings.find((x) => x.id === 'compute-bound');
    expect(f?.measurement.value).toBeCloseTo(99, 6);
    expect(f?.text).toContain('CPU was 97.0% busy');
    expect(d.summary).toMatch(/99\.0% of the 100 ms step is arithmetic/);
    expect(d.summary).not.toMatch(/-bound/); // the bound is said beside the summary (the card's badge, the CLI's prefix), not twice
  });

  it('reads memory headroom, GPU idling, host overhead and noise from their numbers', () => {
    const d = diagnose(
      baseline({ data: 1, h2d: 3, forward: 4, backward: 4, other: 10 }, { device: 'cuda:0', gpuUtilizationMean: 40, memoryBytes: 9.5e9, deviceTotalBytes: 10e9, noiseFloor: 0.08 }),
    );
    expect(d.bound).toBe('host-overhead');
    const ids = d.findings.map((f) => f.id);
    expect(ids).toEqual(expect.arrayContaining(['h2d-wait', 'gpu-idle', 'host-overhead', 'memory-full', 'noisy']));
    expect(d.findings.find((f) => f.id === 'memory-full')?.measurement.value).toBeCloseTo(5, 6);
    expect(d.findings.find((f) => f.id === 'host-overhead')?.measurement).toEqual({ name: 'phasesPercent.other', value: 45.45454545454545, unit: '%' });
  });
});

describe('short measuring windows', () => {
  it("warns when a repetition's window is too short to read, and says how many steps make a second", () => {
    // npm start's job on an H100: 8 steps of 7.547 ms.
    const b = baseline({ forward: 2.8, backward: 4.1, other: 0.647 }, { device: 'cuda:0' });
    const f = diagnose(b, 8).findings.find((x) => x.id === 'short-window');
    expect(f?.severity).toBe('warning');
    expect(f?.text).toBe(
      'Each repetition measures 8 steps of 7.55 ms: 60.4 ms, too short to read steadily (launch jitter, and no GPU power or other-load reading fits in it). Measure about 1 s a repetition: 133 steps or more.',
    );
    expect(f?.measurement).toEqual({ name: 'baseline.windowSeconds', value: expect.closeTo(0.060376, 9), unit: 's' });
  });

  it('says nothing from half a second up', () => {
    const b = baseline({ forward: 6, backward: 4 });
    expect(diagnose(b, 50).findings.map((x) => x.id)).not.toContain('short-window');
  });
});

describe('physical limits', () => {
  it('derives each floor from the measured rate and says how far the baseline is from it', () => {
    const l = physicalLimits({
      flopsPerSample: 1e6,
      samplesPerStep: 100,
      gemm: { gflops: 100, shape: '512^3 fp32', how: 'measured' },
      gemmMissing: '',
      bytesPerSample: 1000,
      readMBps: 1000,
      readWhat: 'the cache',
      h2dMBps: null,
      h2dMissing: 'a CPU target copies nothing to a device',
      baselineStepMs: 30,
    });
    // 3 x 1e6 x 100 = 3e8 FLOPs at 1e11 FLOP/s = 3 ms; 1e5 bytes at 1e9 B/s = 0.1 ms.
    expect(l.compute.stepMs).toBeCloseTo(3, 9);
    expect(l.compute.baselineOverFloor).toBeCloseTo(10, 9);
    expect(l.read.stepMs).toBeCloseTo(0.1, 9);
    expect(l.read.samplesPerSec).toBeCloseTo(1e6, 3);
    expect(l.h2d.stepMs).toBeNull();
    expect(l.h2d.derivation).toBe('not measured: a CPU target copies nothing to a device');
    expect(l.floorStepMs).toBeCloseTo(3, 9);
    expect(l.summary).toMatch(/compute floor is the highest/);
  });

  it('puts the copy floor beside the others, with how its rate was measured, and names it when it is the highest', () => {
    const l = physicalLimits({
      flopsPerSample: 1e6,
      samplesPerStep: 100,
      gemm: { gflops: 1e5, shape: '4096^3 fp32', how: 'cuBLASLt, measured' },
      gemmMissing: '',
      bytesPerSample: 1e5,
      readMBps: 1e5,
      readWhat: 'the cache',
      h2dMBps: 2000,
      h2dHow: 'pinned cudaMemcpyAsync to cuda:0, best of 10 after a warm-up, timed by events, 10,000,000 bytes a copy',
      h2dMissing: '',
      baselineStepMs: 20,
    });
    // 1e7 bytes per step at 2e9 B/s = 5 ms, over compute's 3 ms and read's 0.1 ms.
    expect(l.h2d.stepMs).toBeCloseTo(5, 9);
    expect(l.h2d.baselineOverFloor).toBeCloseTo(4, 9);
    expect(l.h2d.derivation).toBe('10,000,000 bytes per step at 2,000 MB/s host-to-device (pinned cudaMemcpyAsync to cuda:0, best of 10 after a warm-up, timed by events, 10,000,000 bytes a copy) = 5 ms');
    expect(l.floorStepMs).toBeCloseTo(5, 9);
    expect(l.summary).toMatch(/^The host-to-device floor is the highest: no setting of this model and data can step faster than 5 ms/);
  });

  it("says the highest floor's samples/s as the Limits chart labels its bar (3,088, not 3 significant digits' 3,090)", () => {
    // 1e7 x 3 FLOPs x 10 samples at 92.64 GFLOP/s: 3.238 ms a step, 3,088 samples/s.
    const l = physicalLimits({ flopsPerSample: 1e7, samplesPerStep: 10, gemm: { gflops: 92.64, shape: '1024^3 fp32', how: 'measured' }, gemmMissing: '', bytesPerSample: 1, readMBps: null, readWhat: 'f', h2dMBps: null, h2dMissing: 'n', baselineStepMs: 20 });
    expect(l.compute.samplesPerSec).toBeCloseTo(3088, 0);
    expect(l.summary).toContain(`(${formatValue(l.compute.samplesPerSec)} samples/s)`);
    expect(l.summary).toContain('(3,088 samples/s)');
  });

  it('says what it could not measure instead of inventing a floor', () => {
    const l = physicalLimits({ flopsPerSample: 1, samplesPerStep: 1, gemm: null, gemmMissing: 'the CPU GEMM benchmark failed: x', bytesPerSample: 1, readMBps: null, readWhat: 'f', h2dMBps: null, h2dMissing: 'n', baselineStepMs: 1 });
    expect(l.compute.stepMs).toBeNull();
    expect(l.floorStepMs).toBeNull();
    expect(l.compute.derivation).toContain('the CPU GEMM benchmark failed: x');
  });
});

describe('candidate changes and presets', () => {
  const request = (preset: 'balanced' | 'reproducible') =>
    OptimiseRequestSchema.parse({ target: { spec: { family: 'mlp', input: [4], outputs: 2 }, data: { kind: 'example-board' } }, preset });

  /**
   * The wizard loop's next change from a saved engine state, as the engine wizard's session asks it: the engine
   * runner's knobs in the diagnosis's order, the preset's refusals recorded in state.skipped. Nothing is
   * measured, so the runner's measuring parts (benchmarks, run) are never reached.
   */
  function nextChange(s: WizardState, knobCtx: KnobContext) {
    const r = s.request;
    const runner = new EngineRepetitions(null as never, r, null as never, { id: 't', cancelled: false, cancel: null }, false);
    runner.knobs = { diagnosis: s.diagnosis!, ctx: knobCtx };
    const rules = { preset: r.preset, repeat: r.repeat, maxTrials: r.maxTrials, allowRecipeChanges: r.allowRecipeChanges, lossTolerance: r.lossTolerance, confounders: r.confounders, objective: r.objective };
    return new WizardLoop(runner, rules, { cancelled: () => false, progress: () => undefined, afterTrial: async () => undefined }).next(s);
  }

  it('the reproducible preset refuses a numerics change and a recipe change, naming why', () => {
    const s = initialState('t', request('reproducible'));
    s.diagnosis = diagnose(baseline({ forward: 50, backward: 50 }));
    const next = nextChange(s, { ...ctx, device: 'cuda:0' });
    expect(next?.kind).toBe('pipeline');
    const refused = s.skipped.filter((x) => x.why.startsWith('refused by the reproducible preset'));
    expect(refused.map((x) => x.change.knob)).toEqual(expect.arrayContaining(['batchSize', 'precision']));
    expect(refused.every((x) => x.change.kind !== 'pipeline')).toBe(true);
    expect(refused.find((x) => x.change.knob === 'precision')?.why).toContain('alters the numerics');
  });

  it('the balanced preset tries precision first on a compute-bound GPU step, and skips it on the CPU with the reason', () => {
    const s = initialState('t', request('balanced'));
    s.diagnosis = diagnose(baseline({ forward: 50, backward: 50 }, { device: 'cuda:0' }));
    expect(nextChange(s, { ...ctx, device: 'cuda:0' })?.knob).toBe('precision');
    const cpu = initialState('t', request('balanced'));
    cpu.diagnosis = diagnose(baseline({ forward: 50, backward: 50 }));
    expect(nextChange(cpu, ctx)?.knob).toBe('batchSize');
    expect(cpu.skipped.find((x) => x.change.knob === 'precision')?.why).toBe('mixed precision needs a CUDA device; this target runs on cpu');
  });

  it('stops when every knob was tried since the last kept change, or the trial budget is spent', () => {
    const s = initialState('t', request('balanced'));
    s.diagnosis = diagnose(baseline({ forward: 50, backward: 50 }));
    s.exhausted = ['batchSize', 'readFrom', 'loaderWorkers', 'prefetch'];
    expect(nextChange(s, ctx)).toBeNull();
    s.exhausted = [];
    s.request.maxTrials = 0;
    expect(nextChange(s, ctx)).toBeNull();
  });

  it('applies a change to the configuration and refuses a knob the target does not have', () => {
    const c = config({ loaderWorkers: 0 }, 'source');
    const [first, second] = candidateChanges(c, diagnose(baseline({ data: 9, forward: 1 })), ctx).changes;
    expect(applyChange(c, first).readFrom).toBe('cache');
    expect(applyChange(c, second).options.loaderWorkers).toBe(1);
    expect(() => applyChange(c, { ...first, knob: 'warpSpeed' })).toThrow(/warpSpeed is not a setting/);
  });
});
