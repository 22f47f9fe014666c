// Issue 30, finding 11: the probe never stops a script from starting, and costs inner module calls nothing.
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { SCRIPTS } from './script-helpers';
import { doneOf, fixtureReport, INTERPRETERS, runProbed, stepsOf } from './probe-run';

describe.each(INTERPRETERS)('the probe on $label', (interp) => {
  describe.skipIf(interp.python === null)(interp.python ? 'robust and cheap' : `skipped: ${interp.why}`, () => {
    it('a torch whose patched private is renamed still runs the script, measured without that part, and says so', async () => {
      // The chained sitecustomize renames torch.utils.data.dataloader._BaseDataLoaderIter as torch is imported.
      const run = await runProbed([interp.python!, 'probe_loops.py', 'plain'], { env: { PYTHONPATH: path.join(SCRIPTS, 'renamed_private') } });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain("trainbench probe: could not patch DataLoader iterators (AttributeError(\"module 'torch.utils.data.dataloader' has no attribute '_BaseDataLoaderIter'\")); measuring without it");
      const report = fixtureReport<{ iterations: number }>(run.stdout);
      const [p] = run.processes;
      expect(stepsOf(p)).toHaveLength(report.iterations);
      expect(doneOf(p)?.steps).toBe(report.iterations);
      expect(stepsOf(p).every((s) => s.samples === 0)).toBe(true); // no fetches seen: no samples, rather than wrong ones
    }, 60_000);

    it('after the first iterations only the modules called outermost keep hooks, and no global module hook exists', async () => {
      const run = await runProbed([interp.python!, 'probe_hook_count.py', '4']);
      expect(run.code, run.stderr).toBe(0);
      const hooks = fixtureReport<{ hooked: string[]; modules: number; globalHooks: number }>(run.stdout, 'HOOKS ');
      expect(hooks.modules).toBe(601);
      expect(hooks.globalHooks).toBe(0);
      // The model and its loss module: the other 600 module calls of each forward pay nothing.
      expect(hooks.hooked).toEqual(['Sequential', 'MSELoss']);
      const steps = stepsOf(run.processes[0]);
      expect(steps).toHaveLength(4);
      expect(steps.at(-1)!.phasesMs.forward).toBeGreaterThan(0);
      expect(steps.at(-1)!.phasesMs.loss).toBeGreaterThan(0);
    }, 60_000);
  });
});
