// Issue 14: the optimisation wizard on a script target finds a better num_workers than 0 for a dataset that does work per item.
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { scriptWizard } from '../helpers/target-detail';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, runCli, SCRIPTS } from './script-helpers';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

describe('trainbench optimise -- <script>', () => {
  it('keeps dataloader.num_workers 0 -> 2 on a per-item-bound dataset, measured A/B/A/B, and skips what does not apply on the CPU', async () => {
    const mark = newMark();
    // 5 pairs: the fewest whose interval (93.8%) may keep a change; 3 could only lean (issue 38).
    // Conditions only recorded: beside the other test files' load, a pair could stay "confounded" (test/script/confounders-*.test.ts cover that).
    const { code, stdout, stderr } = await runCli(
      ['optimise', '--json', '--confounders', 'record', '--repeat', '5', '--steps', '12', '--warmup-steps', '3', '--max-trials', '1', '--workspace', ws.dir, '--env', `TB_TEST_MARK=${mark}`, '--', PYTHON, path.join(SCRIPTS, 'slow_items.py')],
      400_000,
    );
    expect(code, stderr).toBe(0);
    const r = scriptWizard(JSON.parse(stdout));
    expect(r.target.loader).toMatchObject({ num_workers: 0, batch_size: 32 });
    expect(r.baseline.repetitions).toHaveLength(5);
    expect(r.baseline.phasesPercent.data).toBeGreaterThan(50); // the diagnosis the change rests on
    const [trial] = r.trials;
    expect(trial.change).toMatchObject({ knob: 'dataloader.num_workers', from: 0, to: 2, kind: 'pipeline' });
    expect(trial.bestSamplesPerSec).toHaveLength(5);
    expect(trial.candidateSamplesPerSec).toHaveLength(5);
    expect(trial.decision).toBe('accept');
    expect(trial.speedup!.low).toBeGreaterThan(1);
    expect(r.target.final!.overrides).toEqual({ 'dataloader.num_workers': 2 });
    expect(r.final.changes).toEqual(['dataloader.num_workers 0 -> 2']);
    expect(r.skipped.map((s) => s.change.knob)).toEqual(expect.arrayContaining(['dataloader.pin_memory', 'cudnn.benchmark', 'matmul.precision']));
    expect(r.skipped.find((s) => s.change.knob === 'cudnn.benchmark')?.why).toContain('this script trains on cpu');
    expect(processesWithMark(mark)).toEqual([]);
  }, 400_000);
});
