// An optimisation's "How to reproduce" command measures and judges as the run did: a UI walk's left out the
// skipped batch search and the CPU memory cap, so running it searched batches the original had not.
import { describe, expect, it } from 'vitest';

import type { ReportRun } from '../../src-main/core/reports/report-runs';
import { reproduceCommand } from '../../src-main/core/reports/reproduce';

const optimiseRun = (request: Record<string, unknown>, options: Record<string, unknown>) =>
  ({
    kind: 'optimise',
    id: '20261205-103423-fcdf10',
    record: {
      config: {
        jobId: 'optimise-x',
        spec: { family: 'mlp' },
        request: { target: { spec: { family: 'mlp' }, data: { kind: 'fashion-mnist' }, options: { device: 'cpu', batchSize: 64, ...options } }, preset: 'balanced', repeat: 5, steps: 30, warmupSteps: 5, maxTrials: 12, lossTolerance: 0.05, ...request },
      },
    },
  }) as unknown as ReportRun;

describe("an optimisation's reproduce command", () => {
  it('skips the batch search, caps the memory and measures the window as the run did', () => {
    const { command } = reproduceCommand(optimiseRun({ batchSearch: false, minWindowSeconds: 0.5, confounders: 'remeasure', objective: 'energy' }, { memoryLimitBytes: 1073741824 }));
    expect(command).toContain(' --min-window 0.5 --confounders remeasure --objective energy --no-batch-search --memory-limit 1073741824 ');
  });

  it('says nothing of a batch search the run left on, or of a memory cap it did not set', () => {
    const { command, caveats } = reproduceCommand(optimiseRun({ batchSearch: true }, { memoryLimitBytes: 0 }));
    expect(command).not.toMatch(/--no-batch-search|--memory-limit/);
    expect(caveats.join(' ')).not.toContain('memoryLimitBytes');
  });
});
