// Issue 14: find-batch-size on a script target; an out-of-memory error (simulated at batch >= 20) is a data point.
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BatchSearchResultSchema } from '../../src-main/api/batch-size';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, runCli, SCRIPTS } from './script-helpers';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

describe('trainbench find-batch-size -- <script>', () => {
  it('finds the largest batch below the out-of-memory guard, with every OOM recorded as a trial', async () => {
    const mark = newMark();
    const { code, stdout, stderr } = await runCli([
      'find-batch-size', '--json', '--start-batch', '8', '--steps', '3', '--warmup-steps', '1', '--workspace', ws.dir,
      '--env', `TB_TEST_MARK=${mark}`, '--env', 'OOM_AT=20', '--', PYTHON, path.join(SCRIPTS, 'oom_guard.py'),
    ]);
    expect(code, stderr).toBe(0);
    const r = BatchSearchResultSchema.parse(JSON.parse(stdout));
    expect(r.target.kind).toBe('script');
    expect(r.largestFitting).toBe(19);
    expect(r.trials.map((t) => [t.batchSize, t.outcome])).toEqual([[8, 'ok'], [16, 'ok'], [32, 'E_OOM'], [24, 'E_OOM'], [20, 'E_OOM'], [18, 'ok'], [19, 'ok']]);
    for (const t of r.trials.filter((x) => x.outcome === 'E_OOM')) expect(t.message).toContain(`simulated at batch ${t.batchSize}`);
    expect(r.recommended).not.toBeNull();
    expect(r.verdict).toContain('batch 19 is the largest that fits (20: E_OOM)');
    expect(processesWithMark(mark)).toEqual([]);
  }, 180_000);

  it('refuses dataloader.batch_size among the overrides: it is what the search varies', async () => {
    const { code, stderr } = await runCli(['find-batch-size', '--set', 'dataloader.batch_size=4', '--workspace', ws.dir, '--', PYTHON, path.join(SCRIPTS, 'oom_guard.py')]);
    expect(code).toBe(1);
    expect(stderr).toContain('dataloader.batch_size is what find-batch-size varies');
  });
});
