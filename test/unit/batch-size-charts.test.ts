import { describe, expect, it } from 'vitest';

import { batchSizeLabel, batchSizeOption } from '../../src-main/api/charts/batch-size-charts';

const predicted = (bytes: number) => ({ weights: 0, gradients: 0, optimizerState: 0, activations: bytes, activationGrads: 0, batchData: 0, workspace: 0, total: bytes });
const memory = (bytes: number, processPeakRssBytes: number | null = null) => ({ kind: 'engine' as const, predicted: predicted(bytes), memoryBeforeBytes: 0, memoryAfterBytes: 0, backAtBaseline: true, processPeakRssBytes });
const engineTrials = [
  { batchSize: 256, accumulation: 1, outcome: 'ok' as const, samplesPerSec: 900, peakBytes: 2 ** 29, target: memory(2 ** 29) },
  { batchSize: 512, accumulation: 1, outcome: 'E_OOM' as const, samplesPerSec: null, peakBytes: null, target: memory(2 ** 30) },
  { batchSize: 1024, accumulation: 1, outcome: 'crash' as const, samplesPerSec: null, peakBytes: null, target: memory(2 ** 31) },
];
const script = { kind: 'script' as const };

type Series = { name: string; type: string; data: number[][] };

describe('failed batches are marked on the batch axis', () => {
  it('the engine search: out of memory and killed batches as their own series, and in the text alternative', () => {
    const series = (batchSizeOption(engineTrials, null) as { series: Series[] }).series;
    expect(series.find((s) => s.name === 'out of memory')).toMatchObject({ type: 'scatter', data: [[512, 0]] });
    expect(series.find((s) => s.name === 'killed')).toMatchObject({ type: 'scatter', data: [[1024, 0]] });
    expect(series.find((s) => s.name === 'samples/s')?.data).toEqual([[256, 900]]);
    expect(batchSizeLabel(engineTrials)).toMatch(/batch 256: .*; out of memory at batch 512; killed at batch 1024$/);
  });

  it('no failure, no empty failure series', () => {
    const series = (batchSizeOption(engineTrials.slice(0, 1), null) as { series: Series[] }).series;
    expect(series.map((s) => s.name)).toEqual(['samples/s', 'predicted MiB', 'measured MiB']);
  });

  it("on the CPU draws the process's peak as the OS counted it, not the engine's accounting that repeats the prediction (issue 38)", () => {
    const cpu = [{ ...engineTrials[0], target: memory(2 ** 29, 3 * 2 ** 29) }, engineTrials[1]];
    const series = (batchSizeOption(cpu, null) as { series: Series[] }).series;
    expect(series.map((s) => s.name)).toEqual(['samples/s', 'predicted MiB', 'process peak MiB', 'out of memory']);
    expect(series.find((s) => s.name === 'process peak MiB')?.data).toEqual([[256, 1536]]);
    expect(batchSizeLabel(cpu)).toMatch(/^Throughput and memory by batch size chart: batch 256: 900 samples\/s, process peak 1,536 MiB; out of memory at batch 512$/);
  });

  it('the script search marks them the same way', () => {
    const trials = [
      { batchSize: 16, accumulation: 1, outcome: 'ok' as const, samplesPerSec: 100, peakBytes: null, target: script },
      { batchSize: 32, accumulation: 1, outcome: 'E_OOM' as const, samplesPerSec: null, peakBytes: null, target: script },
    ];
    const series = (batchSizeOption(trials, null) as { series: Series[] }).series;
    expect(series.find((s) => s.name === 'out of memory')).toMatchObject({ type: 'scatter', data: [[32, 0]] });
    expect(batchSizeLabel(trials)).toMatch(/out of memory at batch 32/);
  });
});

describe('the usable memory line', () => {
  type WithLine = Series & { markLine?: { label: { position: string; formatter: string }; data: { yAxis: number }[] } };
  const lineOf = (option: unknown) => (option as { series: WithLine[] }).series.find((s) => s.markLine)?.markLine;

  it('labels it inside the plot above its right end, off the MiB axis, on both targets', () => {
    const engine = lineOf(batchSizeOption(engineTrials, 2 ** 30));
    expect(engine).toMatchObject({ label: { formatter: 'usable', position: 'insideEndTop' }, data: [{ yAxis: 1024 }] });
    const scripts = lineOf(batchSizeOption([{ batchSize: 16, accumulation: 1, outcome: 'ok', samplesPerSec: 100, peakBytes: 2 ** 29, target: script }], 2 ** 30));
    expect(scripts).toEqual(engine);
  });

  it('draws no line without a usable memory (a CPU search without a limit)', () => {
    expect(lineOf(batchSizeOption(engineTrials, null))).toBeUndefined();
  });
});
