// Issue 30: the probe measures what the script does on PyTorch 1.13 and 2.x. Each loop in
// test/fixtures/scripts/probe_loops.py counts its own iterations, samples and losses; the probe's
// report must say the same, and its phases must fit inside the steps they belong to.
import { describe, expect, it } from 'vitest';

import type { Interpreter, ProbedRun, Step } from './probe-run';
import { accounted, doneOf, fixtureReport, INTERPRETERS, kindOf, lossesOf, runProbed, stepsOf } from './probe-run';

interface Report {
  iterations: number;
  samples: number[];
  losses: number[];
  stepCalls: number;
  skippedIterations?: number[];
  scales?: number[];
  closureCalls?: number;
  evalBatches?: number;
  graphBreaks?: number;
  uniqueGraphs?: number;
  fp32?: string[];
  hooksInside?: number;
}

const LOOPS = 'probe_loops.py';
const major = (i: Interpreter) => Number(i.torch?.split('.')[0] ?? 0);
const minor = (i: Interpreter) => Number(i.torch?.split('.')[1] ?? 0);
const atLeast = (i: Interpreter, m: number, n: number) => major(i) > m || (major(i) === m && minor(i) >= n);

async function loop(i: Interpreter, mode: string, env: Record<string, string> = {}, extra: string[] = []) {
  return runProbed([i.python!, LOOPS, mode, ...extra], { env });
}

/** The probe's steps, samples and losses are the loop's own; its phases and data wait fit inside the steps. */
/** The warnings in a run's stderr, without what differs between two runs (time, pid, path, dynamo's frame id). */
function warningsOf(stderr: string): string[] {
  const out = new Set<string>();
  for (const line of stderr.split('\n')) {
    const logged = /^[WE]\d{4} [\d:.]+ +\d+ \S+\] (?:\[[\d/]+\] )?(.*)$/.exec(line);
    const warned = /^\S+:\d+: (\w*Warning: .*)$/.exec(line);
    if (logged) out.add(logged[1]);
    else if (warned) out.add(warned[1]);
  }
  return [...out].sort();
}

function expectSameAsTheLoop(run: ProbedRun, options: { samples?: boolean } = {}): { report: Report; steps: Step[] } {
  expect(run.code, run.stderr).toBe(0);
  expect(run.invalid).toEqual([]);
  expect(run.processes).toHaveLength(1);
  const report = fixtureReport<Report>(run.stdout);
  const [p] = run.processes;
  const steps = stepsOf(p);
  expect(steps.map((s) => s.step)).toEqual(Array.from({ length: report.iterations }, (_, k) => k + 1));
  expect(doneOf(p)?.steps).toBe(report.iterations);
  if (options.samples !== false) expect(steps.map((s) => s.samples)).toEqual(report.samples);
  const losses = lossesOf(p);
  expect([...losses.keys()]).toEqual(steps.map((s) => s.step));
  report.losses.forEach((loss, k) => expect(losses.get(k + 1), `loss of step ${k + 1}`).toBeCloseTo(loss, 4));
  const { parts, total } = accounted(steps);
  expect(parts, 'phases + data wait against the steps’ time (ms)').toBeLessThanOrEqual(total + 0.01);
  return { report, steps };
}

describe.each(INTERPRETERS)('the probe on $label', (interp) => {
  const hasIt = interp.python !== null;
  const on = (cond: boolean) => it.skipIf(!hasIt || !cond);

  describe.skipIf(!hasIt)(hasIt ? 'loops measured as they count themselves' : `skipped: ${interp.why}`, () => {
    it('a plain loop and gradient accumulation: one step per optimizer step, the micro-batches’ samples and losses added', async () => {
      expectSameAsTheLoop(await loop(interp, 'plain'));
      const { steps } = expectSameAsTheLoop(await loop(interp, 'accumulation'));
      expect(steps.every((s) => s.batches === 4 && s.samples === 32)).toBe(true);
    }, 60_000);

    // Finding 3: more than one outermost step() per iteration was k steps.
    for (const mode of ['two_optimizers', 'per_group', 'loaderless'] as const) {
      it(`${mode}: one iteration is one step, however many step() calls it makes`, async () => {
        const run = await loop(interp, mode);
        const { report, steps } = expectSameAsTheLoop(run, { samples: mode !== 'loaderless' });
        expect(report.stepCalls).toBe(2 * report.iterations);
        expect(steps.every((s) => s.optimizerSteps === 2)).toBe(true);
        if (mode === 'loaderless') expect(steps.every((s) => s.samples === 0)).toBe(true);
      }, 60_000);
    }

    on(atLeast(interp, 2, 9))('Muon on the 2-D weights beside AdamW: one step per iteration', async () => {
      const { report, steps } = expectSameAsTheLoop(await loop(interp, 'muon'));
      expect(report.stepCalls).toBe(2 * report.iterations);
      expect(steps.every((s) => s.optimizerSteps === 2)).toBe(true);
    }, 60_000);

    on(atLeast(interp, 2, 1))('optimizer-in-backward: one step per iteration, and a bounded trial stops outside the gradient hooks', async () => {
      const { steps } = expectSameAsTheLoop(await loop(interp, 'in_backward'));
      expect(steps.every((s) => s.optimizerSteps === 4 && s.phasesMs.optimizer === 0)).toBe(true); // the steps run inside backward
      const bounded = await loop(interp, 'in_backward', { TB_PROBE_WARMUP: '1', TB_PROBE_STEPS: '3' });
      expect(bounded.code, bounded.stderr).toBe(0);
      expect(bounded.stderr).not.toContain('Traceback');
      expect(bounded.stdout).not.toContain('FIXTURE'); // stopped before the loop's end
      expect(doneOf(bounded.processes[0])).toMatchObject({ reason: 'steps', steps: 4 });
      expect(stepsOf(bounded.processes[0]).map((s) => s.step)).toEqual([1, 2, 3, 4]);
    }, 60_000);

    it('a bounded trial of a two-optimizer loop runs the iterations asked for, not half of them', async () => {
      const whole = fixtureReport<Report>((await loop(interp, 'two_optimizers')).stdout);
      const run = await loop(interp, 'two_optimizers', { TB_PROBE_WARMUP: '1', TB_PROBE_STEPS: '3' });
      expect(run.code, run.stderr).toBe(0);
      expect(doneOf(run.processes[0])).toMatchObject({ reason: 'steps', steps: 4 });
      // Each step's loss is its whole iteration's (discriminator + generator), as the loop computed it.
      const losses = lossesOf(run.processes[0]);
      whole.losses.slice(0, 4).forEach((loss, k) => expect(losses.get(k + 1)).toBeCloseTo(loss, 4));
    }, 60_000);

    // Issue 38: once settled, a step closes on a shorter path; a second model's new optimizer must hand it back, or
    // the hooks put on every module of that model to find its outermost ones would stay (a slower forward).
    it('a second model and optimizer made after the first trained: every step counted, its forward timed, no hooks left inside it', async () => {
      const { report, steps } = expectSameAsTheLoop(await loop(interp, 'two_phases', {}, ['--iterations', '16']));
      expect(report.hooksInside).toBe(0);
      expect(steps.slice(8).every((s) => s.phasesMs.forward > 0)).toBe(true);
    }, 60_000);

    // Finding 1: GradScaler handed loss * scale to backward, and a skipped step merged two iterations.
    on(atLeast(interp, 2, 3))('GradScaler: the loss before scaling, and the skipped step a skipped iteration', async () => {
      const { report, steps } = expectSameAsTheLoop(await loop(interp, 'amp'));
      expect(report.skippedIterations).toEqual([3]);
      expect(report.scales?.[0]).toBe(65536);
      expect(steps.map((s) => s.skipped)).toEqual(steps.map((s) => s.step === 3));
    }, 60_000);

    // Finding 4: the closure's forward and backward were inside the optimizer phase and counted again.
    it('step(closure) with SGD and LBFGS: phases fit in the step, the loss is what step() returns', async () => {
      const { report } = expectSameAsTheLoop(await loop(interp, 'closure'));
      expect(report.closureCalls).toBeGreaterThan(report.iterations); // LBFGS evaluates its closure more than once
    }, 60_000);

    // Finding 6: recomputation counted as forward inside backward, and a nested backward reset the depth.
    it('activation checkpointing, reentrant and not: recomputation and the nested backward are not counted twice', async () => {
      const { steps } = expectSameAsTheLoop(await loop(interp, 'checkpoint'));
      for (const s of steps) expect(s.phasesMs.forward + s.phasesMs.backward).toBeLessThanOrEqual(s.durMs);
    }, 60_000);

    // Finding 10: module transforms in the Dataset were forward and data; evaluation batches were training.
    it('a module transform inside the Dataset (num_workers=0) is data, not forward', async () => {
      expectSameAsTheLoop(await loop(interp, 'transform'));
    }, 60_000);

    it('an evaluation pass every 3 iterations: its batches are not training samples, its time is not the step’s', async () => {
      const { report, steps } = expectSameAsTheLoop(await loop(interp, 'eval'));
      expect(report.evalBatches).toBe(80);
      expect(steps.every((s) => s.batches === 1 && s.samples === 8)).toBe(true);
      // The passes run after iterations 3 and 6, so inside 4's and 7's windows.
      expect(steps.filter((s) => (s.evalMs ?? 0) > 0).map((s) => s.step)).toEqual([4, 7]);
    }, 60_000);

    // Issue 38 item 4: an evaluation with grad left on was counted as training (1,408 samples a step instead of 128).
    for (const mode of ['eval_grad', 'eval_inference'] as const) {
      it(`${mode}: the evaluation pass is not training, however it turns grad off or leaves it on`, async () => {
        const { report, steps } = expectSameAsTheLoop(await loop(interp, mode));
        expect(report.evalBatches).toBe(80);
        expect(steps.every((s) => s.batches === 1 && s.samples === 8)).toBe(true);
        expect(steps.filter((s) => (s.evalMs ?? 0) > 0).map((s) => s.step)).toEqual([4, 7]);
      }, 60_000);
    }

    // ... and eval mode alone is not evaluation: a backward or a train-mode forward on the same batch is training.
    for (const mode of ['frozen_bn', 'distill'] as const) {
      it(`${mode}: a model in eval mode whose batch training uses is training`, async () => {
        const { steps } = expectSameAsTheLoop(await loop(interp, mode));
        expect(steps.every((s) => s.batches === 1 && s.samples === 8 && (s.evalMs ?? 0) === 0)).toBe(true);
        expect(steps.every((s) => s.phasesMs.forward > 0)).toBe(true);
      }, 60_000);
    }

    // Finding 2: samples were 0 for batches that are not tensors, tuples or dicts.
    for (const mode of ['mapping', 'dataclass'] as const) {
      it(`${mode} batches: samples counted`, async () => {
        const { steps } = expectSameAsTheLoop(await loop(interp, mode));
        expect(steps.every((s) => s.samples === 8)).toBe(true);
      }, 60_000);
    }

    // Finding 7: a batch-size override failed the run on a loader built with a batch_sampler.
    it('a DataLoader built with a BatchSampler takes the batch-size override, or keeps one it already has', async () => {
      const same = await loop(interp, 'batch_sampler', { TB_PROBE_SET: JSON.stringify({ 'dataloader.batch_size': 8 }) });
      expectSameAsTheLoop(same);
      expect(kindOf(same.processes[0], 'applied')).toEqual([expect.objectContaining({ key: 'dataloader.batch_size', value: 8 })]);
      const other = await loop(interp, 'batch_sampler', { TB_PROBE_SET: JSON.stringify({ 'dataloader.batch_size': 4 }) });
      const { steps } = expectSameAsTheLoop(other);
      expect(steps.every((s) => s.samples === 4)).toBe(true);
      expect(kindOf(other.processes[0], 'loader')).toEqual([expect.objectContaining({ settings: expect.objectContaining({ batch_size: 4 }) })]);
    }, 60_000);

    on(major(interp) >= 2)('torchdata’s StatefulDataLoader (no DataLoader.__init__) gets the override and is measured', async () => {
      const run = await loop(interp, 'stateful', { TB_PROBE_SET: JSON.stringify({ 'dataloader.batch_size': 4 }) });
      const { steps } = expectSameAsTheLoop(run);
      expect(steps.every((s) => s.samples === 4)).toBe(true);
      expect(kindOf(run.processes[0], 'applied')).toEqual([expect.objectContaining({ key: 'dataloader.batch_size', value: 4 })]);
    }, 60_000);

    // Finding 8: global module hooks made torch.compile warn, and the probe's hooks were traced (graph breaks).
    for (const mode of ['compile_model', 'compile_step'] as const) {
      on(atLeast(interp, 2, 1))(`${mode}: no warning from the probe, the same graph breaks and graphs as without it, every step counted`, async () => {
        const run = await loop(interp, mode);
        const { report } = expectSameAsTheLoop(run);
        const alone = await runProbed([interp.python!, LOOPS, mode], { noProbe: true });
        // torch warns on its own here (2.13: the optimizer's record_function inside a compiled frame);
        // the probe must add nothing. Paths are not matched: CI's venv lives under .cache/trainbench.
        expect(warningsOf(run.stderr)).toEqual(warningsOf(alone.stderr));
        expect(run.stderr).not.toMatch(/global hooks|trainbench_probe/i);
        const own = fixtureReport<Report>(alone.stdout);
        expect({ breaks: report.graphBreaks, graphs: report.uniqueGraphs }).toEqual({ breaks: own.graphBreaks, graphs: own.uniqueGraphs });
      }, 120_000);
    }

    // Finding 5: with the fp32_precision API in the script, the probe's legacy read-back raised inside step().
    on(atLeast(interp, 2, 9))('matmul.precision beside a script that uses the fp32_precision API: confirmed, or reported undone, never a crash', async () => {
      const agreeing = await loop(interp, 'tf32_new', { TB_PROBE_SET: JSON.stringify({ 'matmul.precision': 'high' }) });
      const { report } = expectSameAsTheLoop(agreeing);
      expect(report.fp32).toEqual(['tf32', 'tf32']);
      expect(kindOf(agreeing.processes[0], 'applied')).toContainEqual(expect.objectContaining({ key: 'matmul.precision', value: 'high' }));
      expect(agreeing.stderr).not.toContain('Warning');
      const undoing = await loop(interp, 'tf32_new', { TB_PROBE_SET: JSON.stringify({ 'matmul.precision': 'highest' }) });
      expectSameAsTheLoop(undoing);
      const errors = kindOf(undoing.processes[0], 'error').map((e) => e.message);
      expect(errors[0]).toContain('override matmul.precision="highest" was undone at the first measured step: the script sets it itself (now "high")');
    }, 60_000);
  });
});
