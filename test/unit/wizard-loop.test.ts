import { describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import type { OptimiseChange, OptimisePreset, OptimiseTrial } from '../../src-main/api/optimise';
import type { Conditions } from '../../src-main/api/telemetry';
import type { SearchState, WizardRules } from '../../src-main/core/targets/target-runner';
import { WizardLoop } from '../../src-main/core/optimise/wizard-loop';
import type { Candidates, Repetition, WizardTarget } from '../../src-main/core/targets/target-runner';

/**
 * The loop's rules on a target whose throughput is a known function of its settings: what each knob
 * does is fixed, so every decision below follows from the rules alone. The real runners are covered
 * end to end by test/cli/optimise.test.ts (engine) and test/script/optimise-script*.test.ts (script).
 */
type Config = Record<string, number>;

const change = (knob: string, from: number, to: number, kind: OptimiseChange['kind'] = 'pipeline'): OptimiseChange => ({
  knob, from, to, kind, label: `${knob} ${from} -> ${to}`, hypothesis: 'h', note: kind === 'recipe' ? 'scale the learning rate' : null,
});

class KnownTarget implements WizardTarget<Config, Repetition> {
  readonly unit = 'launch';
  launches = 0;
  ready = true;
  /** Why the loss cannot be compared, as a script runner says when two launches disagree. */
  unchecked: string | null = null;
  constructor(
    readonly kind: 'engine' | 'script',
    /** samples/s of a configuration; a throw is what that configuration does (an OOM, a crash). */
    private readonly speed: (c: Config, launch: number) => number,
    private readonly loss: (c: Config) => number | null = () => null,
    private readonly onLaunch: (n: number) => void = () => undefined,
    /** What else the machine did during a launch (the confounder tests); none by default. */
    private readonly conditions: (n: number) => Conditions | null = () => null,
    /** Samples per joule of a configuration (the energy objective); none by default, as on a CPU. */
    private readonly perJoule: ((c: Config, n: number) => number) | null = null,
  ) {}
  async measure(c: Config): Promise<Repetition> {
    const n = ++this.launches;
    this.onLaunch(n);
    const energy = this.perJoule ? { samplesPerJoule: this.perJoule(c, n), energyMissing: null } : { samplesPerJoule: null, energyMissing: 'the target trains on the CPU' };
    return { samplesPerSec: this.speed(c, n), loss: this.loss(c), conditions: this.conditions(n), ...energy };
  }
  apply(c: Config, ch: OptimiseChange): Config {
    return { ...c, [ch.knob]: ch.to as number };
  }
  candidates(best: Config, exhausted: readonly string[]): Candidates | null {
    if (!this.ready) return null;
    const all = [change('workers', best.workers, best.workers * 2), change('precision', best.precision, 16, 'numerics'), change('batch', best.batch, best.batch * 2, 'recipe')];
    return {
      changes: all.filter((c) => !exhausted.includes(c.knob) && !(c.knob === 'workers' && best.workers >= 8) && !(c.knob === 'precision' && best.precision === 16)),
      skipped: [{ change: change('cache', 0, 1), why: 'this target has no cache' }],
    };
  }
  lossUnchecked(): string | null {
    return this.unchecked;
  }
  refuses(c: OptimiseChange, preset: OptimisePreset): string | null {
    return this.kind === 'script' && c.kind === 'numerics' && preset !== 'max-speed' ? 'no loss to guard it' : null;
  }
  words(kept: readonly string[]) {
    return { subject: `The target with ${kept.join(', ')}`, unchanged: 'keep it as it is', allowRecipe: 'allow recipe changes' };
  }
}

const rules = (over: Partial<WizardRules> = {}): WizardRules => ({ preset: 'max-speed', repeat: 5, maxTrials: 10, allowRecipeChanges: false, lossTolerance: 0.01, confounders: 'remeasure', objective: 'throughput', ...over });
const start = (): SearchState<Config> => ({ best: { workers: 1, precision: 32, batch: 64 }, trials: [], exhausted: [], skipped: [] });

/** Workers scale throughput up to 4; fp16 adds 30%; batch 128 adds 40%; an irregular jitter of up to 0.5% per launch. */
const realistic = (c: Config, n: number) => 1000 * Math.min(c.workers, 4) * (c.precision === 16 ? 1.3 : 1) * (c.batch >= 128 ? 1.4 : 1) * (1 + 0.005 * Math.sin(1.7 * n));

async function wizard(runner: KnownTarget, r: WizardRules, state = start()) {
  const events: string[] = [];
  const loop = new WizardLoop(runner, r, { cancelled: () => false, progress: (p) => events.push(p.phase), afterTrial: async () => undefined });
  const base = await loop.baseline(state.best);
  const samples = base.map((b) => b.samplesPerSec);
  await loop.search(state, 0.01);
  const final = await loop.final({ workers: 1, precision: 32, batch: 64 }, state, { samplesPerSec: { low: samples[0], median: samples[0], high: samples[0] }, noiseFloor: 0.01 });
  return { state, final, events };
}

const decisions = (trials: OptimiseTrial[]) => trials.map((t) => `${t.change.label}: ${t.decision}`);

describe('the one optimisation wizard loop', () => {
  it('climbs one change at a time, keeps what beats the noise, proposes a recipe change, and confirms the best against the baseline', async () => {
    const { state, final } = await wizard(new KnownTarget('engine', realistic), rules());
    expect(decisions(state.trials)).toEqual([
      'workers 1 -> 2: accept',
      'workers 2 -> 4: accept',
      'workers 4 -> 8: inconclusive',
      'precision 32 -> 16: accept',
      // A kept change may change what the others do: every knob is open again.
      'workers 4 -> 8: inconclusive',
      'batch 64 -> 128: proposed',
    ]);
    expect(state.best).toEqual({ workers: 4, precision: 16, batch: 64 });
    expect(final.changes).toEqual(['workers 1 -> 2', 'workers 2 -> 4', 'precision 32 -> 16']);
    expect(final.speedup.median).toBeCloseTo(5.2, 1);
    expect(final.proposals).toEqual(['batch 64 -> 128: scale the learning rate']);
    expect(state.skipped).toEqual([{ change: change('cache', 0, 1), why: 'this target has no cache' }]);
  });

  it('gives the engine and the script the same trials and verdicts where both may try a change', async () => {
    const engine = await wizard(new KnownTarget('engine', realistic), rules({ preset: 'max-speed' }));
    const script = await wizard(new KnownTarget('script', realistic), rules({ preset: 'max-speed' }));
    expect(decisions(script.state.trials)).toEqual(decisions(engine.state.trials));
    expect(script.final.verdict.replace('The target', '')).toEqual(engine.final.verdict.replace('The target', ''));
    expect(Object.keys(script.final).sort()).toEqual(Object.keys(engine.final).sort());
  });

  it('skips with a reason what the target refuses, and what the trial budget left untried', async () => {
    const { state } = await wizard(new KnownTarget('script', realistic), rules({ preset: 'balanced', maxTrials: 2 }));
    expect(decisions(state.trials)).toEqual(['workers 1 -> 2: accept', 'workers 2 -> 4: accept']);
    const why = Object.fromEntries(state.skipped.map((s) => [s.change.knob, s.why]));
    expect(why.precision).toBe('no loss to guard it');
    expect(why.batch).toBe('not tried: the wizard stopped at its most trials (2)');
    expect(why.workers).toBe('not tried: the wizard stopped at its most trials (2)');
  });

  it('drops a change whose loss moves past the tolerance, where the target measures loss', async () => {
    const lossOf = (c: Config) => (c.precision === 16 ? 2.1 : 2.0);
    const { state } = await wizard(new KnownTarget('engine', realistic, lossOf), rules({ preset: 'balanced' }));
    const fp16 = state.trials.find((t) => t.change.knob === 'precision')!;
    expect(fp16.decision).toBe('changes-results');
    expect(fp16.lossDelta).toBeCloseTo(0.05, 6);
    expect(state.best.precision).toBe(32);
  });

  it('keeps a change on speed alone where the loss cannot be compared, says so, and never calls a moved loss a change of results', async () => {
    const lossOf = (c: Config) => (c.precision === 16 ? 2.5 : 2.0);
    const runner = new KnownTarget('engine', realistic, lossOf);
    runner.unchecked = 'two launches of the same settings gave mean losses 2.00000 and 2.10000 with the same seed';
    const { state } = await wizard(runner, rules({ preset: 'balanced' }));
    const fp16 = state.trials.find((t) => t.change.knob === 'precision')!;
    expect(fp16).toMatchObject({ decision: 'accept', kept: true, lossDelta: null });
    expect(fp16.why).toMatch(/; kept without a loss check: two launches of the same settings gave mean losses 2\.00000 and 2\.10000 with the same seed$/);
    const rejected = state.trials.find((t) => t.decision === 'inconclusive')!;
    expect(rejected.why).not.toContain('loss check');
  });

  it('drops a change whose loss is not finite with the same seed, naming the divergence', async () => {
    const lossOf = (c: Config) => (c.precision === 16 ? Infinity : 2.0);
    const { state } = await wizard(new KnownTarget('engine', realistic, lossOf), rules({ preset: 'max-speed' }));
    const fp16 = state.trials.find((t) => t.change.knob === 'precision')!;
    expect(fp16).toMatchObject({ decision: 'changes-results', kept: false });
    expect(fp16.why).toBe('the loss was not finite over the measured steps with the same seed: the change makes the training diverge');
  });

  it('records a change that runs out of memory as crashed, with what it measured, and goes on from the best', async () => {
    const ooms = (c: Config, n: number) => {
      if (c.batch >= 128) throw new ApiError('E_OOM', 'CUDA out of memory at batch 128');
      return realistic(c, n);
    };
    const { state } = await wizard(new KnownTarget('engine', ooms), rules({ allowRecipeChanges: true }));
    const batch = state.trials.find((t) => t.change.knob === 'batch')!;
    expect(batch).toMatchObject({ decision: 'crashed', kept: false, error: 'CUDA out of memory at batch 128' });
    expect(batch.why).toBe('the trial ran out of memory; the wizard continues from the current best');
    expect(batch.bestSamplesPerSec).toHaveLength(0);
    expect(state.best.batch).toBe(64);
  });

  it('ends on a cancel without recording the trial in flight, naming the target\'s unit', async () => {
    let cancelled = false;
    const runner = new KnownTarget('script', realistic, () => null, (n) => {
      if (n === 8) cancelled = true;
    });
    const state = start();
    const loop = new WizardLoop(runner, rules(), { cancelled: () => cancelled, progress: () => undefined, afterTrial: async () => undefined });
    await loop.baseline(state.best);
    const err = await loop.search(state, 0.01).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('E_CANCELLED');
    expect((err as ApiError).message).toBe('cancelled after launch 8');
    expect(state.trials).toEqual([]);
    expect(runner.launches).toBe(8);
  });

  it('counts the trials left for the ETA: the budget before the target knows its knobs, the open changes after', async () => {
    const runner = new KnownTarget('engine', realistic);
    runner.ready = false;
    const loop = new WizardLoop(runner, rules({ maxTrials: 7 }), { cancelled: () => false, progress: () => undefined, afterTrial: async () => undefined });
    expect(loop.trialsLeft(start())).toBe(7);
    runner.ready = true;
    expect(loop.trialsLeft(start())).toBe(3);
    expect(loop.trialsLeft({ ...start(), exhausted: ['workers'] })).toBe(2);
  });
});

/** A quiet machine's window, and one where other processes filled both cores (a CPU-bound target on 2 cores). */
const quiet: Conditions = { seconds: 2, cores: 2, targetCpuCores: 1, otherCpuCores: 0.05, cpuMHz: null, gpuSlowdown: {}, gpuSmClockMHz: null, gpuTemperatureMaxC: null, gpuOtherProcesses: [] };
const hogged: Conditions = { ...quiet, targetCpuCores: 0.7, otherCpuCores: 1.3 };

describe('the wizard loop and the machine around it (confounders)', () => {
  // Workers only (max-trials 1): launches 1-5 are the baseline, then best/candidate alternate from launch 6.
  const oneTrial = rules({ maxTrials: 1 });

  it('measures a pair again when another process crowded one side of it, and decides on the clean pairs', async () => {
    // A hog during launch 7, the first pair's candidate: that pair is measured again (launches 8 and 9), and the trial decides.
    const hogAt7 = () => new KnownTarget('engine', realistic, () => null, () => undefined, (n) => (n === 7 ? hogged : quiet));
    const labels: (string | null)[] = [];
    const loop = new WizardLoop(hogAt7(), oneTrial, { cancelled: () => false, progress: (p) => labels.push(p.label), afterTrial: async () => undefined });
    await loop.baseline(start().best);
    await loop.search(start(), 0.01);
    // The progress says it, as it happens (UI round 4: "measuring pair 1 of 2" stood still for half a minute).
    expect(labels).toContain('workers 1 -> 2; measuring pair 1 again (other processes used 0.05 cores during the best and 1.30 cores during the candidate)');
    const runner = hogAt7();
    const { state } = await wizard(runner, oneTrial);
    const [trial] = state.trials;
    expect(trial.decision).toBe('accept');
    expect(trial.bestSamplesPerSec).toHaveLength(5);
    expect(trial.why).toMatch(/1 pair was measured again because the machine's conditions differed between its sides/);
    const again = trial.conditions!.filter((r) => r.remeasured !== null);
    expect(again.map((r) => [r.pair, r.side])).toEqual([[1, 'best'], [1, 'candidate']]);
    expect(again[0].remeasured).toBe('other processes used 0.05 cores during the best and 1.30 cores during the candidate');
    expect(trial.conditions).toHaveLength(12); // 5 pairs + the one measured again
    expect(runner.launches).toBe(5 + 12 + 10); // baseline, the trial, the final A/B/A/B
  });

  it('leaves the trial undecided, "confounded", when every re-measure is crowded again, and says what it would have said', async () => {
    // Every candidate launch of the trial hogged (even launches from 6 on): two re-measures, then the pair is kept and named.
    const runner = new KnownTarget('engine', realistic, () => null, () => undefined, (n) => (n >= 6 && n <= 17 && n % 2 === 1 ? hogged : quiet));
    const { state, final } = await wizard(runner, oneTrial);
    const [trial] = state.trials;
    expect(trial.decision).toBe('confounded');
    expect(trial.kept).toBe(false);
    expect(trial.why).toMatch(/^confounded: pair 1: other processes used 0\.05 cores during the best and 1\.30 cores during the candidate \(measured again 2 times\); not decided, what it would have said: /);
    expect(trial.speedup).not.toBeNull(); // what was measured is shown
    expect(trial.conditions!.filter((r) => r.remeasured !== null)).toHaveLength(4);
    expect(final.changes).toEqual([]);
  });

  it('only records the conditions with --confounders record: nothing is measured again and the trial decides', async () => {
    const runner = new KnownTarget('engine', realistic, () => null, () => undefined, (n) => (n >= 6 && n % 2 === 1 ? hogged : quiet));
    const { state } = await wizard(runner, rules({ maxTrials: 1, confounders: 'record' }));
    const [trial] = state.trials;
    expect(trial.decision).toBe('accept');
    expect(trial.conditions).toHaveLength(10);
    expect(trial.conditions!.every((r) => r.remeasured === null)).toBe(true);
  });

  it('says so in the final verdict when the final comparison stays confounded', async () => {
    // The trial is clean; the final (launches from 16) has every kept side hogged.
    const runner = new KnownTarget('engine', realistic, () => null, () => undefined, (n) => (n >= 16 && n % 2 === 1 ? hogged : quiet));
    const { final } = await wizard(runner, oneTrial);
    expect(final.changes).toEqual(['workers 1 -> 2']);
    expect(final.verdict).toMatch(/Take it with care: the final comparison was confounded \(pair 1: other processes used .* during the candidate\), even after 2 re-measured pairs\.$/);
    expect(final.conditions!.filter((r) => r.remeasured !== null)).toHaveLength(4);
  });
});

describe('the wizard loop with the energy objective (samples per joule)', () => {
  // More workers: 2x the samples/s at 2x the power, so the same samples per joule; fp16: 1.3x the samples/s at 0.8x the power.
  const jitter = (n: number) => 1 + 0.005 * Math.sin(1.7 * n);
  const speed = (c: Config, n: number) => 1000 * Math.min(c.workers, 4) * (c.precision === 16 ? 1.3 : 1) * jitter(n);
  const perJoule = (c: Config, n: number) => 4 * (c.precision === 16 ? 1.3 / 0.8 : 1) * jitter(n + 1);
  const energyRules = rules({ objective: 'energy', maxTrials: 2 });

  it('keeps what saves energy per sample, not what is only faster, and records both for every trial', async () => {
    const { state, final } = await wizard(new KnownTarget('engine', speed, () => null, () => undefined, () => null, perJoule), energyRules);
    expect(decisions(state.trials)).toEqual(['workers 1 -> 2: inconclusive', 'precision 32 -> 16: accept']);
    const [workers, fp16] = state.trials;
    expect(workers.speedup!.median).toBeCloseTo(1, 1); // samples/J unchanged, though samples/s doubled
    expect(workers.candidateSamplesPerSec[0] / workers.bestSamplesPerSec[0]).toBeCloseTo(2, 1);
    expect(fp16.speedup!.median).toBeCloseTo(1.625, 1);
    expect(fp16.bestSamplesPerJoule).toHaveLength(5);
    expect(fp16.candidateSamplesPerJoule).toHaveLength(5);
    expect(final.changes).toEqual(['precision 32 -> 16']);
    expect(final.speedup.median).toBeCloseTo(1.625, 1);
    expect(final.verdict).toMatch(/^The target with precision 32 -> 16 is [\d.]+x \(9[\d.]+% CI [\d.]+x–[\d.]+x\) the baseline's samples per joule of GPU energy, measured A\/B\/A\/B over 5 pairs\./);
  });

  it('is refused after the first repetition that read no GPU power, naming why', async () => {
    const runner = new KnownTarget('engine', speed);
    const loop = new WizardLoop(runner, energyRules, { cancelled: () => false, progress: () => undefined, afterTrial: async () => undefined });
    await expect(loop.baseline(start().best)).rejects.toThrow(
      /^the energy objective compares samples per joule of GPU energy, and this launch measured none: the target trains on the CPU; optimise samples\/s instead \(the throughput objective\)$/,
    );
    expect(runner.launches).toBe(1);
  });
});
