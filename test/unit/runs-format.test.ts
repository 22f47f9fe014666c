// `trainbench runs` says why a run ended in words, as the Runs page does (issue 41 item 5), not as the stored
// "E_OOM: …" or "E_CANCELLED: …" of its run.json.
import { describe, expect, it } from 'vitest';

import type { RunSummary } from '../../src-main/api/training';
import { formatRuns } from '../../src-main/cli/runs-command';

const run = (id: string, status: RunSummary['status'], error: string | null): RunSummary => ({
  id,
  kind: 'train',
  status,
  createdAt: '2026-12-06T03:00:00.000Z',
  finishedAt: '2026-12-06T03:01:00.000Z',
  title: 'mlp on fashion-mnist-train (60000 records)',
  testAccuracy: null,
  samplesPerSec: null,
  gpuUtilizationMean: null,
  error,
  lastStep: null,
  interruption: null,
  problem: null,
});

describe('trainbench runs', () => {
  it('says a failed or cancelled run’s error in words, without its contract code', () => {
    const text = formatRuns([
      run('20261206-030000-aaaaaa', 'failed', 'E_OOM: the step needs 3.2 GiB, 1.1 GiB is free at batch 4096'),
      run('20261206-030001-bbbbbb', 'cancelled', 'E_CANCELLED: run 20261206-030001-bbbbbb was cancelled before its first step'),
      run('20261206-030002-cccccc', 'failed', 'E_INTERNAL: the engine host exited'),
    ]);
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/failed +mlp on .*out of memory: the step needs 3\.2 GiB, 1\.1 GiB is free at batch 4096$/);
    expect(lines[1]).toMatch(/cancelled +mlp on .* {2}run 20261206-030001-bbbbbb was cancelled before its first step$/);
    expect(lines[2]).toMatch(/unexpected error: the engine host exited$/);
    expect(text).not.toMatch(/\bE_[A-Z_]+\b/);
  });
});
