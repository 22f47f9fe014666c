// Issue 30: the real clients on torch 2.x (CPU), and the Trainer on 1.13 too (issue 38), under the probe: what the probe records is what
// Hugging Face's Trainer, accelerate (2 processes) and Lightning count and log themselves.
// Models are built from small configs and tokenizers here; nothing is fetched from a hub.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { freePort } from '../helpers/free-port';
import { torch1ClientsPython } from '../helpers/pythons';
import { tempDir } from '../helpers/temp-dir';

import type { ProbeProcess, ProbedRun } from './probe-run';
import { accounted, binOf, doneOf, fixtureReport, kindOf, lossesOf, runProbed, stepsOf, TORCH2 } from './probe-run';

const missing = (() => {
  if (!TORCH2.python) return TORCH2.why;
  try {
    execFileSync(TORCH2.python, ['-c', 'import transformers, accelerate, lightning'], { stdio: 'ignore' });
    return null;
  } catch {
    return `${TORCH2.python} lacks transformers, accelerate or lightning: run scripts/ci-torch2.sh`;
  }
})();
if (missing && process.env.TB_REQUIRE_TORCH2 === '1') throw new Error(`TB_REQUIRE_TORCH2=1 but ${missing}`);

// Hugging Face's Trainer on Debian's torch 1.13 too (transformers 4.46, the last line that runs on it). Not Lightning:
// LightningModule imports torch.distributed._shard, which torch 1.13 cannot import on Python 3.11.
const TORCH1_CLIENTS = torch1ClientsPython();
const missing1 = (() => {
  try {
    execFileSync(TORCH1_CLIENTS, ['-c', 'import torch, transformers, accelerate; assert torch.__version__.startswith("1.")'], { stdio: 'ignore' });
    return null;
  } catch {
    return `${TORCH1_CLIENTS} lacks torch 1.x with transformers and accelerate: run scripts/ci-torch1-clients.sh`;
  }
})();
if (missing1 && process.env.TB_REQUIRE_TORCH1_CLIENTS === '1') throw new Error(`TB_REQUIRE_TORCH1_CLIENTS=1 but ${missing1}`);

const out = tempDir();
afterAll(() => out.cleanup());

const OFFLINE = { HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' };

function oneProcess(run: ProbedRun): ProbeProcess {
  expect(run.code, run.stderr.slice(-4000)).toBe(0);
  expect(run.invalid).toEqual([]);
  expect(run.processes).toHaveLength(1);
  return run.processes[0];
}

/** Steps and losses as the library logged them (step -> loss), phases inside the steps. */
function expectLogged(p: ProbeProcess, steps: number, logged: Record<string, number>) {
  const own = stepsOf(p);
  expect(own.map((s) => s.step)).toEqual(Array.from({ length: steps }, (_, k) => k + 1));
  expect(doneOf(p)?.steps).toBe(steps);
  const losses = lossesOf(p);
  expect(Object.keys(logged).map(Number)).toEqual(own.map((s) => s.step));
  for (const [step, loss] of Object.entries(logged)) expect(losses.get(Number(step)), `loss at step ${step}`).toBeCloseTo(loss, 4);
  const { parts, total } = accounted(own);
  expect(parts).toBeLessThanOrEqual(total + 0.01);
  return own;
}

interface HfReport {
  steps: number;
  losses: Record<string, number>;
  samplesPerStep: number;
  evaluations: number;
}

// Accelerate's DataLoaderShard fetches one batch ahead of the one it yields: the probe sees that
// batch fetched (and used) in the first iteration, so step 1 carries one batch more (ADR 0022).
const AHEAD = 1;

const hfEvaluatingTitle = (accumulation: number) => `Hugging Face Trainer, fp32 with gradient checkpointing, accumulation ${accumulation} and evaluation every 3 steps`;
/** The Trainer's own evaluation loop between its steps: its batches are not training samples, its time is in evalMs. */
async function hfEvaluating(python: string, accumulation: number) {
  const run = await runProbed([python, 'clients/hf_trainer.py', '--checkpointing', '--eval-every', '3', '--batch', '4', '--accumulation', String(accumulation)], { env: OFFLINE });
  const report = fixtureReport<HfReport>(run.stdout);
  expect(report.evaluations).toBe(2);
  const steps = expectLogged(oneProcess(run), report.steps, report.losses);
  expect(steps.slice(1).every((s) => s.samples === report.samplesPerStep && s.batches === accumulation)).toBe(true);
  expect(steps[0].batches).toBe(accumulation + AHEAD);
  expect(steps.filter((s) => (s.evalMs ?? 0) > 0).map((s) => s.step)).toEqual([4]); // after step 3; step 6's ends the run
}

describe.skipIf(missing !== null)(missing ? `real clients: skipped: ${missing}` : `real clients on ${TORCH2.label}`, () => {
  it(hfEvaluatingTitle(2), () => hfEvaluating(TORCH2.python!, 2), 180_000);

  it('Hugging Face Trainer, fp16 (GradScaler on the CPU): the loss the Trainer logs, not the scaled one', async () => {
    const run = await runProbed([TORCH2.python!, 'clients/hf_trainer.py', '--precision', 'fp16', '--accumulation', '1', '--steps', '5'], { env: OFFLINE });
    const report = fixtureReport<HfReport>(run.stdout);
    const steps = expectLogged(oneProcess(run), report.steps, report.losses);
    expect(steps.slice(1).every((s) => s.samples === report.samplesPerStep)).toBe(true);
  }, 180_000);

  it('Hugging Face Trainer, bf16 with accumulation 2', async () => {
    const run = await runProbed([TORCH2.python!, 'clients/hf_trainer.py', '--precision', 'bf16', '--steps', '4'], { env: OFFLINE });
    const report = fixtureReport<HfReport>(run.stdout);
    expectLogged(oneProcess(run), report.steps, report.losses);
  }, 180_000);

  it('accelerate launch with 2 processes: each rank’s steps, samples and losses, and a batch-size override on its re-sharded loaders', async () => {
    const argv = [binOf(TORCH2.python!, 'accelerate'), 'launch', '--multi_gpu', '--num_processes', '2', '--num_machines', '1', '--main_process_port', String(await freePort()), '--mixed_precision', 'no', '--dynamo_backend', 'no', 'clients/accelerate_loop.py', '--batch', '4', '--out', out.dir];
    const run = await runProbed(argv, { env: { ...OFFLINE, ACCELERATE_USE_CPU: 'true', OMP_NUM_THREADS: '1', TB_PROBE_SET: JSON.stringify({ 'dataloader.batch_size': 4 }) } });
    expect(run.code, run.stderr.slice(-4000)).toBe(0);
    expect(run.invalid).toEqual([]);
    const reports = [0, 1].map((r) => JSON.parse(readFileSync(path.join(out.dir, `rank${r}.json`), 'utf8')) as { rank: number; steps: number; samples: number[]; losses: number[] });
    expect(reports.map((r) => r.rank).sort()).toEqual([0, 1]);
    expect(run.processes.map((p) => p.hello.rank).sort()).toEqual([0, 1]);
    for (const p of run.processes) {
      const own = reports.find((r) => r.rank === p.hello.rank)!;
      expect(p.hello.worldSize).toBe(2);
      const steps = expectLogged(p, own.steps, Object.fromEntries(own.losses.map((l, k) => [String(k + 1), l])));
      expect(steps.slice(1).map((s) => s.samples)).toEqual(own.samples.slice(1));
      expect(steps[0].samples).toBe(own.samples[0] + 4 * AHEAD);
      // The override reached the loader the script made and the one accelerate re-made with a batch_sampler.
      expect(kindOf(p, 'applied').map((m) => m.value)).toEqual([4, 4]);
      expect(kindOf(p, 'error')).toEqual([]);
    }
  }, 180_000);

  interface LightningReport {
    steps: number;
    losses: Record<string, number>;
    samples: number[];
    valBatches: number;
  }

  for (const precision of ['32-true', 'bf16-mixed', '16-mixed'] as const) {
    it(`Lightning Trainer, automatic optimisation (closure steps), ${precision}, validation and its sanity check`, async () => {
      const run = await runProbed([TORCH2.python!, 'clients/lightning_trainer.py', '--precision', precision], { env: { PYTHONWARNINGS: 'ignore' } });
      const report = fixtureReport<LightningReport>(run.stdout);
      expect(report.valBatches).toBe(2 + 2 * 4); // the sanity check's 2, then 4 after steps 3 and 6
      const steps = expectLogged(oneProcess(run), report.steps, report.losses);
      expect(steps.map((s) => s.samples)).toEqual(report.samples);
      expect(steps.filter((s) => (s.evalMs ?? 0) > 0).map((s) => s.step)).toEqual([4, 7]);
      expect(steps[0].durMs).toBeGreaterThan(0); // the sanity check before training is in no step
    }, 180_000);
  }
});

describe.skipIf(missing1 !== null)(missing1 ? `real clients on torch 1.13: skipped: ${missing1}` : `real clients on torch 1.13 (${TORCH1_CLIENTS})`, () => {
  // Accumulation 1: transformers 4.46 gives backward() each micro-batch's loss unscaled (its gradient is their sum's)
  // but logs their mean, so the loss the probe reads (what backward was given) is the logged one times the accumulation.
  it(hfEvaluatingTitle(1), () => hfEvaluating(TORCH1_CLIENTS, 1), 180_000);
});
