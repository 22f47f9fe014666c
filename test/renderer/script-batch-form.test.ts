// The Batch size area's Script target: the request its form makes (each bad input refused with the
// field named) and the chart its trials draw (failed batches marked, no memory axis without CUDA).
import { describe, expect, it } from 'vitest';

import { batchSizeLabel, batchSizeOption } from '../../src-main/api/charts/batch-size-charts';
import type { BatchTrial } from '../../src-main/api/batch-size';
import { ScriptBatchSearchRequestSchema } from '../../src-main/api/script-target';
import { defaultSearchNumbers, scriptSearchFromForm } from '../../src-renderer/stores/batch-size';
import { emptyScriptForm } from '../../src-renderer/view-models/script-target-form';

const form = (over: Partial<ReturnType<typeof emptyScriptForm>> = {}) => ({ ...emptyScriptForm(), commandLine: "python3 'my train.py' --epochs 1", cwd: '/home/me/proj', ...over });

describe('scriptSearchFromForm', () => {
  it('makes the search request the API accepts, with the search numbers and not the benchmark ones', () => {
    const numbers = { ...defaultSearchNumbers(), startBatch: 16, maxBatch: 512, stepsPerTrial: 4, warmupSteps: 1, headroomPct: 15 };
    const request = scriptSearchFromForm(form({ env: [{ name: 'OOM_AT', value: '20' }], overrides: [{ key: 'dataloader.num_workers', value: '2' }] }), numbers);
    expect(ScriptBatchSearchRequestSchema.parse(request)).toEqual({
      target: { kind: 'script', command: ['python3', 'my train.py', '--epochs', '1'], cwd: '/home/me/proj', env: { OOM_AT: '20' } },
      overrides: { 'dataloader.num_workers': 2 },
      startBatch: 16,
      maxBatch: 512,
      headroom: 0.15,
      warmupSteps: 1,
      stepsPerTrial: 4,
      timeoutSeconds: 600,
    });
  });

  it('starts from the API defaults', () => {
    const d = ScriptBatchSearchRequestSchema.parse({ target: { kind: 'script', command: ['x'], cwd: '/' } });
    expect(defaultSearchNumbers()).toEqual({ startBatch: d.startBatch, maxBatch: d.maxBatch, warmupSteps: d.warmupSteps, stepsPerTrial: d.stepsPerTrial, headroomPct: 10, timeoutSeconds: d.timeoutSeconds });
  });

  it.each([
    ['the batch override the search varies', form({ overrides: [{ key: 'dataloader.batch_size', value: '64' }] }), {}, 'dataloader.batch_size is what the search varies'],
    ['a relative folder', form({ cwd: 'proj' }), {}, 'working directory must be an absolute path, got "proj"'],
    ['no command', form({ commandLine: '  ' }), {}, 'command: type the command that trains'],
    ['a start above the max', form(), { startBatch: 64, maxBatch: 32 }, 'start batch 64 is above the max batch 32'],
    ['a zero start batch', form(), { startBatch: 0 }, 'startBatch:'],
    ['a headroom over 90%', form(), { headroomPct: 95 }, 'headroom:'],
    ['zero steps per trial', form(), { stepsPerTrial: 0 }, 'stepsPerTrial:'],
  ])('refuses %s, naming it', (_what, f, numbers, message) => {
    expect(() => scriptSearchFromForm(f, { ...defaultSearchNumbers(), ...numbers })).toThrow(message);
  });
});

const trial = (index: number, batchSize: number, outcome: BatchTrial['outcome'], samplesPerSec: number | null, peakBytes: number | null = null): BatchTrial => ({
  index,
  batchSize,
  accumulation: 1,
  outcome,
  samplesPerSec,
  peakBytes,
  target: { kind: 'script' },
  fits: outcome === 'ok',
  seconds: 1,
  message: outcome === 'ok' ? null : 'CUDA out of memory',
});

type Series = { name: string; data: number[][] };

describe('batchSizeOption', () => {
  const trials = [trial(0, 16, 'ok', 1000), trial(1, 32, 'E_OOM', null), trial(2, 24, 'crash', null), trial(3, 20, 'ok', 1200)];

  it('draws samples/s by batch for the trials that trained and marks each failed batch on the axis', () => {
    const option = batchSizeOption(trials, null) as { series: Series[]; yAxis: unknown[] };
    expect(option.series.map((s) => [s.name, s.data])).toEqual([
      ['samples/s', [[16, 1000], [20, 1200]]],
      ['out of memory', [[32, 0]]],
      ['killed', [[24, 0]]],
    ]);
    expect(option.yAxis).toHaveLength(1);
    expect(batchSizeLabel(trials)).toBe('Throughput by batch size chart: batch 16: 1,000 samples/s; batch 20: 1,200 samples/s; out of memory at batch 32; killed at batch 24');
  });

  it('adds the CUDA peak on a MiB axis, with the usable line, when the script used a GPU', () => {
    const cuda = [trial(0, 16, 'ok', 1000, 512 * 2 ** 20), trial(1, 32, 'E_OOM', null)];
    const option = batchSizeOption(cuda, 900 * 2 ** 20) as { series: (Series & { markLine?: { data: { yAxis: number }[] } })[]; yAxis: unknown[] };
    const peak = option.series.find((s) => s.name === 'CUDA peak MiB');
    expect(peak?.data).toEqual([[16, 512]]);
    expect(peak?.markLine?.data).toEqual([{ yAxis: 900 }]);
    expect(option.yAxis).toHaveLength(2);
  });

  it('says when no trial has finished yet', () => {
    expect(batchSizeLabel([])).toBe('Throughput by batch size chart, no trial finished yet');
  });
});
