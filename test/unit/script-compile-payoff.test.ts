// A compile trial's pay-off (issue 28): the compile time a launch paid at its first steps, over the step
// time saved, is how many steps of training it takes to come out ahead, as ADR-003's attempt 4 needed.
import { describe, expect, it } from 'vitest';

import type { OptimiseChange } from '../../src-main/api/optimise';
import type { ScriptOptimiseRequest } from '../../src-main/api/script-target';
import type { RunRecord } from '../../src-main/core/workspace/run-store';
import type { RunningJob, RunningJobs } from '../../src-main/core/jobs/running-jobs';
import type { ScriptRepetition } from '../../src-main/core/targets/script/wizard-launches';
import { ScriptLaunches } from '../../src-main/core/targets/script/wizard-launches';

const runner = new ScriptLaunches({} as ScriptOptimiseRequest, {} as RunRecord, {} as RunningJobs, {} as RunningJob, () => undefined);
const change = (knob: string): OptimiseChange => ({ knob, from: 'off', to: 'default', kind: 'numerics', label: `${knob} off -> default`, hypothesis: 'h', note: null });
const rep = (stepMs: number, compile: ScriptRepetition['compile'] = null): ScriptRepetition => ({
  samplesPerSec: 64_000 / stepMs,
  loss: 2.3,
  stepMs,
  phasesMs: { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0, other: 0 },
  device: 'cpu',
  loader: null,
  compile,
  conditions: null,
  collectives: null,
});

describe("a compile trial's pay-off", () => {
  it('divides the median compile time by the step time saved, and names the recompilations in the measured steps', () => {
    const best = [rep(10), rep(10.2), rep(9.8)];
    const candidate = [rep(8, { seconds: 12, compilations: 2, inMeasuredSteps: 0 }), rep(8, { seconds: 3, compilations: 2, inMeasuredSteps: 1 }), rep(8, { seconds: 4, compilations: 3, inMeasuredSteps: 0 })];
    const out = runner.trialExtras(change('compile.mode'), best, candidate, null)!;
    // median 4 s over 2 ms saved per step: 2,000 steps.
    expect(out.compile).toEqual({ seconds: 4, compilations: 3, inMeasuredSteps: 1, payoffSteps: 2000 });
    expect(out.why).toBe(
      'compiling took 4.0 s per launch (3 compilations, at its first steps); at 2.00 ms saved per step it pays off after 2,000 steps; 1 recompilation fell in the measured steps, and their time is in the speedup',
    );
  });

  it('never pays off when the compiled step is not faster, and says nothing for another knob', () => {
    const out = runner.trialExtras(change('compile.mode'), [rep(10)], [rep(10.5, { seconds: 5, compilations: 2, inMeasuredSteps: 0 })], null)!;
    expect(out.compile.payoffSteps).toBeNull();
    expect(out.why).toBe('compiling took 5.0 s per launch (2 compilations, at its first steps); the compiled step is not faster, so it never pays off');
    expect(runner.trialExtras(change('amp.dtype'), [rep(10)], [rep(8)], null)).toBeNull();
    // Only a compile trial warms up: every other trial's launches are alike.
    expect(runner.warmUp({}, change('amp.dtype'))).toBeNull();
  });

  it('reports the cold first launch apart, with its own pay-off, from the warm measured ones (issue 38)', () => {
    // The case: 2.7 s a warm launch, ~45 s the first (the inductor cache empty).
    const best = [rep(10), rep(10)];
    const candidate = [rep(9.3, { seconds: 2.7, compilations: 2, inMeasuredSteps: 0 }), rep(9.3, { seconds: 2.7, compilations: 2, inMeasuredSteps: 0 })];
    const cold = rep(9.4, { seconds: 45, compilations: 2, inMeasuredSteps: 0 });
    const out = runner.trialExtras(change('compile.mode'), best, candidate, cold)!;
    // 0.7 ms saved per step: 2.7 s repaid after 3,858 steps, 45 s after 64,286.
    expect(out.compile).toEqual({ seconds: 2.7, compilations: 2, inMeasuredSteps: 0, payoffSteps: 3858, coldSeconds: 45, coldPayoffSteps: 64286 });
    expect(out.why).toBe(
      'compiling took 45.0 s in the first launch (caches cold, before the measured pairs) and 2.7 s in each measured launch (2 compilations, at its first steps); at 0.70 ms saved per step it pays off after 64,286 steps from cold, 3,858 once the caches are warm',
    );
  });
});
