// Issue 14 (Runs area): a whole training run of the user's command, recorded like an engine run.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import { parseRunRecord } from '../../src-main/api/run-record';
import { ScriptTrainRequestSchema, type ScriptTrainRequestInput } from '../../src-main/api/script-target';
import type { ScriptProgressEvent } from '../../src-main/api/train-result';
import { isScriptTrainRun, TrainRunResultSchema } from '../../src-main/api/train-result';
import type { Services } from '../../src-main/core/services';
import { createServices } from '../../src-main/core/services';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, SCRIPTS } from './script-helpers';

const ws = tempDir();
let services: Services | null = null;
afterAll(async () => {
  await services?.dispose();
  ws.cleanup();
});

const TUTORIAL = path.join(SCRIPTS, 'fashion_mnist_tutorial.py');
const TINY = path.join(SCRIPTS, 'tiny_train.py');

/** The training capability of a workbench over the test's workspace (a script request goes to the script runner). */
async function service() {
  services ??= await createServices({ workspaceDir: ws.dir });
  return services.training;
}
const request = (command: string[], more: Partial<ScriptTrainRequestInput> = {}, env: Record<string, string> = {}) =>
  ScriptTrainRequestSchema.parse({ target: { kind: 'script', command, cwd: SCRIPTS, env }, ...more });
const runJson = (runDir: string) => parseRunRecord(readFileSync(path.join(ws.dir, runDir, 'run.json'), 'utf8')).record!;
const eventLines = (runDir: string) =>
  readFileSync(path.join(ws.dir, runDir, 'events.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { type: string; step?: number; steps?: number[]; values?: (number | null)[] });

describe('train.run on a script target: a whole run of the user command', () => {
  it('records every optimizer step the tutorial script counts, its loss as the script prints it, telemetry and output', async () => {
    const runs = await service();
    const progress: ScriptProgressEvent[] = [];
    // 200 steps of batch 64: one epoch on the first 12,800 images.
    const result = await runs.run(request([PYTHON, TUTORIAL, '--epochs', '1', '--limit', '12800']), { onProgress: (p) => progress.push(p) });
    expect(isScriptTrainRun(TrainRunResultSchema.parse(result))).toBe(true);
    const own = Number(/Done! steps=(\d+)/.exec(result.target.output.tail.map((l) => l.line).join('\n'))?.[1]);
    expect(own).toBe(200);
    expect(result.steps).toBe(own);
    expect(result.target.ended).toBe('exit');
    expect(result.target.exitCode).toBe(0);
    expect(result.batchSize).toBe(64);
    expect(result.samplesPerSec).toBeGreaterThan(0);
    expect(result.title).toBe(`${PYTHON} ${TUTORIAL} --epochs 1 --limit 12800`);

    // The run as stored: kind train, target the script, every step in events.jsonl.
    const stored = runJson(result.runDir);
    expect(stored.kind).toBe('train');
    expect(stored.status).toBe('completed');
    expect((stored.config as { target: { kind: string } }).target.kind).toBe('script');
    const lines = eventLines(result.runDir);
    const steps = lines.filter((e) => e.type === 'script.step').map((e) => e.step);
    expect(steps).toEqual(Array.from({ length: own }, (_, i) => i + 1));

    // The probe's loss at step 1 and 101 is the value the script prints there ("loss: 2.301234  [   64/12800]").
    const losses = new Map<number, number | null>();
    for (const e of lines.filter((x) => x.type === 'script.loss')) e.steps!.forEach((s, i) => losses.set(s, e.values![i]));
    expect(losses.size).toBe(own);
    const log = readFileSync(path.join(ws.dir, result.target.output.file), 'utf8');
    const printed = [...log.matchAll(/loss: ([\d.]+) +\[ *(\d+)\//g)].map((m) => ({ loss: Number(m[1]), step: Number(m[2]) / 64 }));
    expect(printed.map((p) => p.step)).toEqual([1, 101]);
    for (const p of printed) expect(losses.get(p.step)).toBeCloseTo(p.loss, 5);
    expect(result.target.lastLoss?.step).toBe(own);
    expect(result.target.lossNote).toBeNull();

    // Curves: live progress at most ~10/s, and the stored series ending at the last step.
    expect(progress.length).toBeGreaterThan(0);
    const gaps = progress.slice(1).map((p, i) => p.t - progress[i].t);
    expect(Math.min(...gaps.slice(0, -1))).toBeGreaterThanOrEqual(100);
    expect(progress.at(-1)!.step).toBe(own);
    expect(result.target.series.at(-1)!.step).toBe(own);
    expect(result.target.series.some((p) => p.loss !== null && p.samplesPerSec !== null)).toBe(true);
    // Each step's loss, as recorded (the series' are means over its points: a short run has one or two).
    expect(result.target.lossCurve).toEqual([...losses].filter(([, v]) => v !== null).sort((x, y) => x[0] - y[0]));

    expect(log).toContain(`O Done! steps=${own}`);
    expect(existsSync(path.join(ws.dir, result.runDir, 'telemetry.jsonl'))).toBe(true);
    expect(result.telemetry.samples).toBeGreaterThan(0);
  }, 90_000);

  it('maxSteps ends the script after that many steps', async () => {
    const runs = await service();
    const result = await runs.run(request([PYTHON, TINY, 'plain'], { maxSteps: 5, warmupSteps: 1 }));
    expect(result.steps).toBe(5);
    expect(result.target.ended).toBe('maxSteps');
    expect(result.target.output.tail.map((l) => l.line)).not.toContain('trained steps=12');
  }, 60_000);

  it('Cancel mid-run kills the whole process tree and records the run as cancelled with what it measured', async () => {
    const runs = await service();
    const mark = newMark();
    const runId = `cancel-${mark}`;
    let asked: Promise<{ cancelled: boolean }> | null = null;
    const err = await runs
      .run(request([PYTHON, TUTORIAL, '--epochs', '50', '--num-workers', '2'], { jobId: runId }, { TB_TEST_MARK: mark }), {
        onProgress: (p) => {
          if (p.step >= 30 && !asked) asked = services!.cancelJob(runId);
        },
      })
      .catch((e: unknown) => e);
    expect(await asked).toEqual({ cancelled: true });
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('E_CANCELLED');
    expect(processesWithMark(mark)).toEqual([]);
    const stored = runJson(path.join('runs', runId));
    expect(stored.status).toBe('cancelled');
    const result = TrainRunResultSchema.parse(stored.result);
    if (!isScriptTrainRun(result)) throw new Error('not a script run');
    expect(result.target.ended).toBe('error');
    expect(result.steps).toBeGreaterThanOrEqual(30);
    expect(await services!.cancelJob(runId)).toEqual({ cancelled: false });
  }, 90_000);

  it('a crashing script is recorded failed with the exit code and its stderr tail', async () => {
    const runs = await service();
    const runId = `crash-${newMark()}`;
    const err = await runs.run(request([PYTHON, TINY, 'crash'], { jobId: runId })).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe('E_SCRIPT');
    expect((err as ApiError).message).toContain('exited with code 1 after 3 optimizer step(s)');
    expect((err as ApiError).message).toContain('ValueError: the model exploded at step 3');
    const stored = runJson(path.join('runs', runId));
    expect(stored.status).toBe('failed');
    expect(stored.error?.message).toContain('exited with code 1');
    const result = TrainRunResultSchema.parse(stored.result);
    if (!isScriptTrainRun(result)) throw new Error('not a script run');
    expect(result.steps).toBe(3);
    expect(result.target.exitCode).toBe(1);
    expect(result.target.output.tail.some((l) => l.stream === 'stderr' && l.line.includes('ValueError: the model exploded'))).toBe(true);
  }, 60_000);

  it('a loop without a DataLoader still records its steps and loss, with no rate or batch rather than zeros', async () => {
    const runs = await service();
    const loop = 'import torch\nm = torch.nn.Linear(2, 1)\no = torch.optim.SGD(m.parameters(), lr=0.1)\nfor _ in range(6):\n    m(torch.ones(4, 2)).pow(2).mean().backward(); o.step(); o.zero_grad()\n';
    const result = await runs.run(request([PYTHON, '-c', loop], { warmupSteps: 1 }));
    expect(result).toMatchObject({ steps: 6, batchSize: null, target: { ended: 'exit' } });
    expect(result.samplesPerSec).toBeUndefined();
    expect(result.target.lastLoss?.step).toBe(6);
    expect(result.target.series.every((p) => p.samplesPerSec === null)).toBe(true);
  }, 60_000);

  it('an out-of-memory error is recorded failed as E_OOM with the batch it happened at', async () => {
    const runs = await service();
    const runId = `oom-${newMark()}`;
    const oomGuard = path.join(SCRIPTS, 'oom_guard.py');
    const err = await runs.run(request([PYTHON, oomGuard], { jobId: runId, overrides: { 'dataloader.batch_size': 32 } })).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe('E_OOM');
    expect((err as ApiError).message).toContain('the script ran out of memory at batch 32: CUDA out of memory. Tried to allocate 2048 MiB');
    const stored = runJson(path.join('runs', runId));
    expect(stored.status).toBe('failed');
    expect(stored.error?.code).toBe('E_OOM');
  }, 60_000);

  it('refuses a relative working directory and a run id already taken, naming them', async () => {
    const runs = await service();
    const relative = ScriptTrainRequestSchema.parse({ target: { kind: 'script', command: [PYTHON, TINY], cwd: 'scripts' } });
    await expect(runs.run(relative)).rejects.toThrow('must be an absolute path, got "scripts"');
    const first = await runs.run(request([PYTHON, TINY, 'plain'], { maxSteps: 2, jobId: 'taken-id' }));
    expect(first.steps).toBe(2);
    await expect(runs.run(request([PYTHON, TINY, 'plain'], { jobId: 'taken-id' }))).rejects.toThrow('a run with the id taken-id exists already');
    expect(ScriptTrainRequestSchema.safeParse({ target: { kind: 'script', command: [PYTHON], cwd: SCRIPTS }, maxSteps: 0 }).success).toBe(false);
  }, 60_000);
});
