// Issue 28: the wizard tries the optimizer's implementation on the user's unchanged script, from the knob
// table's row: fused where the installed torch offers it (2.x), foreach where only that exists (1.13).
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { scriptWizard } from '../helpers/target-detail';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { TORCH1, TORCH2 } from './probe-run';
import { runCli, SCRIPTS } from './script-helpers';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

async function wizard(python: string, only = 'optim.impl', maxTrials = 1) {
  const args = ['optimise', '--json', '--repeat', '2', '--steps', '5', '--warmup-steps', '2', '--max-trials', String(maxTrials), '--only', only, '--workspace', ws.dir, '--', python, path.join(SCRIPTS, 'optim_impl.py')];
  const { code, stdout, stderr } = await runCli(args, 300_000);
  expect(code, stderr).toBe(0);
  return scriptWizard(JSON.parse(stdout));
}

describe('trainbench optimise -- <script>: optim.impl', () => {
  it.skipIf(!TORCH2.python)(`measures AdamW fused against its default A/B/A/B (${TORCH2.label})`, async () => {
    const r = await wizard(TORCH2.python!);
    const trial = r.trials.find((t) => t.change.knob === 'optim.impl')!;
    expect(trial.change).toMatchObject({ knob: 'optim.impl', from: 'default', to: 'fused', kind: 'pipeline' });
    expect(trial.error).toBeNull();
    expect(trial.decision).not.toBe('crashed');
    expect(trial.candidateSamplesPerSec).toHaveLength(2);
  }, 300_000);

  it(`measures foreach where torch offers no fused AdamW, and zero_grad(set_to_none=True) where zero_grad writes zeros (${TORCH1.label})`, async () => {
    const r = await wizard(TORCH1.python!, 'optim.impl,optim.set_to_none', 2);
    const trial = r.trials.find((t) => t.change.knob === 'optim.impl')!;
    expect(trial.change).toMatchObject({ knob: 'optim.impl', from: 'default', to: 'foreach' });
    expect(trial.error).toBeNull();
    expect(trial.candidateSamplesPerSec).toHaveLength(2);
    const toNone = r.trials.find((t) => t.change.knob === 'optim.set_to_none')!;
    expect(toNone.change).toMatchObject({ from: false, to: true, kind: 'pipeline' });
    expect(toNone.error).toBeNull();
    // The script seeds itself: the same losses, whether the gradients are zeroed or dropped.
    expect(toNone.lossDelta).toBe(0);
  }, 300_000);
});
