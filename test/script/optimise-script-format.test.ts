// Issue 14: what `trainbench optimise -- <command>` prints at the end: the overrides to keep, as --set flags
// and as the lines to write into the script (the same lines as the app's final card).
import { describe, expect, it } from 'vitest';

import type { ScriptOptimiseResult } from '../../src-main/api/optimise-result';
import { formatOptimise } from '../../src-main/cli/optimise-format';

const interval = (median: number) => ({ low: median * 0.9, median, high: median * 1.1 });
const phases = { data: 36, h2d: 0, forward: 1, loss: 0.5, backward: 1, optimizer: 0.5, other: 1 };

function result(overrides: Record<string, string | number | boolean>): ScriptOptimiseResult {
  return {
    runId: '20261124-142654-5edcd7',
    runDir: 'runs/20261124-142654-5edcd7',
    jobId: '20261124-142654-5edcd7',
    status: 'completed',
    title: 'python3 train.py',
    target: {
      kind: 'script',
      command: { kind: 'script', command: ['python3', 'train.py'], cwd: '/home/me/proj', env: {} },
      loader: { num_workers: 0, prefetch_factor: 2, pin_memory: false, persistent_workers: false, batch_size: 32 },
      baseline: { overrides: {} },
      final: { overrides },
    },
    preset: 'max-speed',
    repeat: 3,
    diagnosis: null,
    limits: null,
    baseline: { samplesPerSec: interval(824), repetitions: [823, 824, 850], noiseFloor: 0.016, stepMs: 40, phasesMs: phases, phasesPercent: phases, device: 'cuda:0' },
    trials: [],
    skipped: [],
    final: { changes: Object.keys(overrides), speedup: interval(1.9), samplesPerSec: interval(1565), verdict: 'kept', proposals: [] },
    seconds: 49,
  };
}

describe('formatOptimise', () => {
  it('ends with the overrides as --set flags and as code for the script', () => {
    const text = formatOptimise(result({ 'dataloader.num_workers': 2, 'dataloader.pin_memory': true, 'matmul.precision': 'high' }));
    expect(text.split('\n').slice(-5)).toEqual([
      'verdict    kept',
      'use        --set dataloader.num_workers=2 --set dataloader.pin_memory=true --set matmul.precision=high',
      'in code    DataLoader(..., num_workers=2, pin_memory=True)',
      '           torch.set_float32_matmul_precision("high")',
      'saved      runs/20261124-142654-5edcd7 (the wizard took 49.0 s)',
    ]);
  });

  it('says to run the script as it is when nothing was kept, with no code lines', () => {
    const text = formatOptimise(result({}));
    expect(text).toContain('use        the script as it is (no override)');
    expect(text).not.toContain('in code');
  });

  it('gives a proposed recipe change that beat the noise as the flag and the line that apply it (issue 27)', () => {
    const r = result({});
    const change = { knob: 'dataloader.batch_size', from: 32, to: 64, kind: 'recipe' as const, label: 'dataloader.batch_size 32 -> 64', hypothesis: 'h', note: 'scale the learning rate (x2)' };
    r.trials = [{ ...({} as ScriptOptimiseResult['trials'][number]), index: 1, change, decision: 'proposed', kept: false, speedup: interval(1.44), why: 'beat the noise', bestSamplesPerSec: [800, 810, 820, 805, 815], candidateSamplesPerSec: [1150, 1170, 1180, 1160, 1175] }];
    r.final = { ...r.final, proposals: ['dataloader.batch_size 32 -> 64: scale the learning rate (x2)'] };
    const lines = formatOptimise(r).split('\n');
    expect(lines.slice(-4)).toEqual([
      'proposal   dataloader.batch_size 32 -> 64: scale the learning rate (x2)',
      'apply      --set dataloader.batch_size=64 (in code: DataLoader(..., batch_size=64))',
      'use        the script as it is, or a proposal above',
      'saved      runs/20261124-142654-5edcd7 (the wizard took 49.0 s)',
    ]);
  });

  it('prints each trial and skipped entry on one line, whatever a resumed state planted in them (re-attack of F1)', () => {
    const r = result({});
    const change = { knob: 'dataloader.num_workers', from: 0, to: 2, kind: 'pipeline' as const, label: 'workers\nverdict    FORGED', hypothesis: 'h', note: null };
    r.trials = [{ ...({} as ScriptOptimiseResult['trials'][number]), index: 1, change, decision: 'reject', kept: false, speedup: interval(0.9), why: 'slower\r\x1b[2Kuse        FORGED', error: null, bestSamplesPerSec: [1, 1], candidateSamplesPerSec: [1, 1] }];
    r.skipped = [{ change: { ...change, label: 'pin\nFORGED' }, why: 'no CUDA\u2028FORGED' }];
    r.final = { ...r.final, verdict: 'kept\nuse        FORGED' };
    const text = formatOptimise(r);
    expect(text.split('\n').filter((l) => /^\S*\s*FORGED/.test(l) || l.startsWith('FORGED'))).toEqual([]);
    expect(['\r', '\x1b', '\u2028'].filter((c) => text.includes(c))).toEqual([]);
    expect(text).toContain('workers\\nverdict    FORGED');
    expect(text).toContain('slower\\r\\x1b[2Kuse        FORGED');
    expect(text).toContain('verdict    kept\\nuse        FORGED');
  });
});
