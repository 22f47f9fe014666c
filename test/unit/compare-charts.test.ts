import { describe, expect, it } from 'vitest';

import { compareCurvesOption, compareThroughputOption, smooth } from '../../src-main/api/charts/compare-charts';
import { compareResults, testAccuracyOf } from '../../src-main/api/compare-results';
import type { RunDetail, RunSummary } from '../../src-main/api/training';
import { epochCurvesOption } from '../../src-main/api/charts/epoch-charts';
import { configDifferences, flattenConfig, settingWords } from '../../src-main/api/run-config';

type Series = { name: string; data: [number, number][] };
const seriesOf = (option: unknown) => (option as { series: Series[] }).series;

describe('run config rows', () => {
  const a = { spec: { family: 'mlp', hidden: [256, 128] }, options: { batchSize: 64, optimizer: { kind: 'sgd', lr: 0.01 } }, runId: 'x', data: { kind: 'fashion-mnist' } };
  const b = { spec: { family: 'mlp', hidden: [512] }, options: { batchSize: 64, optimizer: { kind: 'adamw', lr: 0.001 }, seed: 3 }, runId: 'y', data: { kind: 'fashion-mnist' } };

  it('flattens nested settings to dotted paths, arrays as one value, leaving out the run id', () => {
    expect(flattenConfig(a)).toEqual([
      ['spec.family', 'mlp'],
      ['spec.hidden', '[256, 128]'],
      ['options.batchSize', '64'],
      ['options.optimizer.kind', 'sgd'],
      ['options.optimizer.lr', '0.01'],
      ['data.kind', 'fashion-mnist'],
    ]);
  });

  it('lists only the settings that differ, with null where a run lacks one', () => {
    expect(configDifferences([a, b])).toEqual([
      { key: 'spec.hidden', values: ['[256, 128]', '[512]'] },
      { key: 'options.optimizer.kind', values: ['sgd', 'adamw'] },
      { key: 'options.optimizer.lr', values: ['0.01', '0.001'] },
      { key: 'options.seed', values: [null, '3'] },
    ]);
    expect(configDifferences([a, a])).toEqual([]);
  });

  it('leaves out the job id and settings left unset, which would make every pair of runs differ', () => {
    const c = { ...a, jobId: '20261205-103356-66c52e', resumedFrom: null };
    const d = { ...a, jobId: '20261205-103509-802621', resumedFrom: null };
    expect(configDifferences([c, d])).toEqual([]);
    expect(flattenConfig(c).map(([k]) => k)).not.toContain('resumedFrom');
  });

  it("lines an optimisation's settings up with a benchmark's: what it trains under request.target, how it measures under request", () => {
    const bench = { spec: { family: 'mlp' }, options: { batchSize: 256, loaderWorkers: 1 }, warmupSteps: 2, steps: 4 };
    const wizard = { spec: { family: 'mlp' }, request: { target: { spec: { family: 'mlp' }, options: { batchSize: 256, loaderWorkers: 1 } }, preset: 'balanced', warmupSteps: 1, steps: 4 } };
    expect(configDifferences([bench, wizard])).toEqual([
      { key: 'warmupSteps', values: ['2', '1'] },
      { key: 'preset', values: [null, 'balanced'] },
    ]);
  });
});

describe('compare curves', () => {
  const run = (name: string, samplesPerStep: number, withTime: boolean) => ({
    name,
    samplesPerStep,
    steps: [1, 2, 3, 4].map((s) => ({ globalStep: s * 10, loss: 4 / s, accuracy: s / 5, t: withTime ? 1_000_000 + s * 500 : undefined })),
  });

  it('smooths with a debiased moving average: weight 0 is the raw curve, a constant stays constant', () => {
    expect(smooth([3, 1, 2], 0)).toEqual([3, 1, 2]);
    for (const v of smooth([2, 2, 2, 2], 0.9)) expect(v).toBeCloseTo(2, 12);
    const s = smooth([4, 2, 1.33, 1], 0.6);
    expect(s[0]).toBeCloseTo(4, 12); // debiased: the first point is not pulled to 0
    expect(s[3]).toBeGreaterThan(1); // lags the raw curve that falls
    expect(() => smooth([1], 1)).toThrow(/smoothing must be in \[0, 1\), got 1/);
  });

  it('places points by step, samples seen or seconds since the run began', () => {
    const runs = [run('a', 64, true), run('b', 256, true)];
    expect(seriesOf(compareCurvesOption(runs, 'loss', 'step', 0).option)[1].data.map((p) => p[0])).toEqual([10, 20, 30, 40]);
    expect(seriesOf(compareCurvesOption(runs, 'loss', 'samples', 0).option)[1].data.map((p) => p[0])).toEqual([2560, 5120, 7680, 10240]);
    expect(seriesOf(compareCurvesOption(runs, 'accuracy', 'time', 0).option)[0].data).toEqual([[0, 0.2], [0.5, 0.4], [1, 0.6], [1.5, 0.8]]);
  });

  it('says which run cannot go on a time axis instead of drawing it at zero', () => {
    const chart = compareCurvesOption([run('new', 64, true), run('old', 64, false)], 'loss', 'time', 0.5);
    expect(seriesOf(chart.option).map((s) => s.name)).toEqual(['new']);
    expect(chart.missing).toEqual([expect.stringMatching(/^old: its events carry no time/)]);
    expect(chart.label).toMatch(/smoothed 0.5; last values: new /);
  });
});

describe('epoch curves', () => {
  it('draws train beside test per epoch, leaving out epochs without a test evaluation', () => {
    const epochs = [
      { epoch: 1, trainLoss: 0.9, trainAccuracy: 0.7, testLoss: 0.8, testAccuracy: 0.72 },
      { epoch: 2, trainLoss: 0.5, trainAccuracy: 0.85 },
    ];
    const { option, label } = epochCurvesOption(epochs, 'loss');
    expect(seriesOf(option).map((s) => [s.name, s.data])).toEqual([['train', [[1, 0.9], [2, 0.5]]], ['test', [[1, 0.8]]]]);
    expect(label).toBe('Loss per epoch, train and test over 2 epochs: last train 0.5, test no data');
  });

  it('draws train alone, and says there is no test set, when no epoch was tested', () => {
    const { option, label } = epochCurvesOption([{ epoch: 1, trainLoss: 0.9, trainAccuracy: 0.7, testLoss: undefined, testAccuracy: null }], 'accuracy');
    expect(seriesOf(option).map((s) => s.name)).toEqual(['train']);
    expect(label).toBe('Accuracy per epoch, train (no test set) over 1 epoch: last train 0.7');
  });
});

describe('compare results and throughput', () => {
  const summary = (id: string, extra: Partial<RunSummary> = {}): RunSummary => ({
    id, kind: 'train', status: 'completed', createdAt: '2026-11-27T10:00:00.000Z', finishedAt: '2026-11-27T10:01:30.000Z', title: id, testAccuracy: null,
    samplesPerSec: null, gpuUtilizationMean: null, error: null, lastStep: null, interruption: null, problem: null, ...extra,
  });
  const step = (globalStep: number, t: number | undefined, samplesPerSec: number, loss: number, accuracy: number | null) => ({
    type: 'step' as const, t, epoch: 1, epochs: 1, step: globalStep, stepsPerEpoch: 100, globalStep, totalSteps: 100, loss, accuracy, lr: 0.01, gradNorm: 1, samplesPerSec,
    phasesMs: { data: 0, h2d: 0, forward: 1, loss: 0, backward: 1, optimizer: 0 },
  });
  const t0 = Date.parse('2026-11-27T10:00:00.000Z');
  const a: RunDetail = {
    summary: summary('a', { testAccuracy: 0.81, samplesPerSec: 1200 }),
    record: {},
    events: [step(10, t0 + 1000, 1000, 0.9, 0.6), step(20, t0 + 2000, 1400, 0.5, 0.7), { type: 'epoch', t: t0 + 3000, epoch: 1, epochs: 1, seconds: 2, trainLoss: 0.6, trainAccuracy: 0.7, testLoss: 0.55, testAccuracy: 0.81 }],
    telemetry: [],
  };
  const b: RunDetail = { summary: summary('b', { testAccuracy: 0.85, samplesPerSec: 900, finishedAt: null }), record: {}, events: [step(30, undefined, 900, 0.4, 0.8)], telemetry: [] };
  const script: RunDetail = { summary: summary('s', { samplesPerSec: 900, target: 'script' }), record: { result: { lastLoss: { step: 7, value: 1.25 }, steps: 8 } }, events: [], telemetry: [] };

  it('puts what each run ended with side by side, marks the one best value, and leaves out rows no run has', () => {
    const rows = compareResults([a, b, script]);
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(rows.map((r) => r.key)).toEqual(['testAccuracy', 'testLoss', 'trainAccuracy', 'trainLoss', 'samplesPerSec', 'wallSeconds', 'steps']);
    expect(byKey.testAccuracy).toMatchObject({ values: [0.81, 0.85, null], best: 1 });
    expect(byKey.testLoss).toMatchObject({ values: [0.55, null, null], best: null }); // one value: nothing to beat
    expect(byKey.trainLoss).toMatchObject({ values: [0.5, 0.4, 1.25], best: 1 });
    expect(byKey.samplesPerSec).toMatchObject({ values: [1200, 900, 900], best: 0 });
    expect(byKey.wallSeconds).toMatchObject({ values: [90, null, 90], best: null }); // a shorter run is not a better one
    expect(byKey.steps.values).toEqual([20, 30, 8]);
    // A tie has no winner.
    expect(compareResults([b, script]).find((r) => r.key === 'samplesPerSec')?.best).toBeNull();
    expect(compareResults([{ ...script, record: {} }, { ...script, record: {} }]).map((r) => r.key)).toEqual(['samplesPerSec', 'wallSeconds']);
    // An engine run's result is not read as a script's: a benchmark's `steps` setting is no count of steps run.
    const bench: RunDetail = { ...script, summary: summary('bench', { kind: 'benchmark', target: 'engine' }) };
    expect(compareResults([bench]).map((r) => r.key)).toEqual(['wallSeconds']);
    // Runs of different kinds: their samples/s measure different things, so none is marked best.
    const benchRate: RunDetail = { ...bench, summary: { ...bench.summary, samplesPerSec: 5000 } };
    expect(compareResults([a, benchRate]).find((r) => r.key === 'samplesPerSec')).toMatchObject({ values: [1200, 5000], best: null });
  });

  it("gives a run cancelled after an epoch that epoch's test accuracy, with the epoch: the run's page said '–' where Compare said 89%", () => {
    const cancelled: RunDetail = { ...a, summary: { ...a.summary, status: 'cancelled', testAccuracy: null } };
    expect(testAccuracyOf(cancelled)).toEqual({ accuracy: 0.81, epoch: 1 });
    expect(compareResults([cancelled, b]).find((r) => r.key === 'testAccuracy')?.values).toEqual([0.81, 0.85]);
    expect(testAccuracyOf(a)).toEqual({ accuracy: 0.81, epoch: null }); // finished: its result's, no epoch said
    expect(testAccuracyOf({ ...b, summary: { ...b.summary, testAccuracy: null } })).toEqual({ accuracy: null, epoch: null });
  });

  it('charts samples/s against each run\'s own time since start, and says which runs have no rate over time', () => {
    const chart = compareThroughputOption([
      { name: 'a', points: a.events.filter((e) => e.type === 'step'), startedAt: t0 },
      { name: 'b', points: b.events.filter((e) => e.type === 'step') },
      { name: 'bench', points: [] },
    ]);
    expect(seriesOf(chart.option).map((s) => [s.name, s.data])).toEqual([['a', [[1, 1000], [2, 1400]]]]);
    expect(chart.missing).toEqual([
      'b: its steps carry no time or rate (recorded before events were timestamped)',
      "bench: no steps were recorded, so there is no rate over time (a benchmark's rate is in the table)",
    ]);
    expect(chart.label).toBe('Samples/s over time; a mean 1,200 samples/s');
  });
});

describe('setting names in words (Compare\'s settings that differ)', () => {
  it('names known settings, overrides and the rest by the end of their path', () => {
    expect(settingWords('options.optimizer.lr')).toBe('learning rate');
    expect(settingWords('request.target.spec.family')).toBe('model');
    expect(settingWords('options.batchSize')).toBe('batch size');
    expect(settingWords('request.overrides.dataloader.num_workers')).toBe('override dataloader.num_workers');
    expect(settingWords('request.target.options.evalBatchSize')).toBe('eval batch size');
    expect(settingWords('target.cwd')).toBe('working directory');
    expect(settingWords('request.target.env.CUDA_VISIBLE_DEVICES')).toBe('environment CUDA_VISIBLE_DEVICES');
  });
});
