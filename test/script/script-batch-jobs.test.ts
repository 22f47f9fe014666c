// Issue 14 item 5 (in the app): the script batch-size search as the router runs it: a job in the
// workbench's registry (jobs.cancel stops it, nothing left running, the run recorded cancelled),
// its trials and the script's output streamed as events while it runs.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import type { BatchTrialEvent } from '../../src-main/api/batch-size';
import type { ScriptOutputEvent } from '../../src-main/api/script-target';
import { ScriptBatchSearchRequestSchema } from '../../src-main/api/script-target';
import type { Services } from '../../src-main/core/services';
import { createServices } from '../../src-main/core/services';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, SCRIPTS } from './script-helpers';

const ws = tempDir();
const opened: Services[] = [];
afterAll(async () => {
  for (const s of opened) await s.dispose();
  ws.cleanup();
});

/** A workbench over the test's workspace: its batch-size search, its events and its running jobs. */
async function workbench() {
  const services = await createServices({ workspaceDir: ws.dir });
  opened.push(services);
  return { search: services.batchSize, events: services.events, jobs: services.running };
}

const OOM_GUARD = path.join(SCRIPTS, 'oom_guard.py');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function request(mark: string, jobId: string, extra: Record<string, unknown> = {}) {
  return ScriptBatchSearchRequestSchema.parse({
    target: { kind: 'script', command: [PYTHON, OOM_GUARD], cwd: SCRIPTS, env: { TB_TEST_MARK: mark, OOM_AT: '20' } },
    startBatch: 16,
    warmupSteps: 1,
    stepsPerTrial: 3,
    jobId,
    ...extra,
  });
}

function runJson(workspaceDir: string, runDir: string): { status: string; error?: { code: string; message: string } } {
  return JSON.parse(readFileSync(path.join(workspaceDir, runDir, 'run.json'), 'utf8')) as { status: string; error?: { code: string; message: string } };
}

describe('the batch-size search on a script target as a job', () => {
  it('streams each trial and the script output as events while it runs, and finds the largest batch under the OOM guard', async () => {
    const { search, events, jobs } = await workbench();
    const mark = newMark();
    const trials: BatchTrialEvent[] = [];
    const output: ScriptOutputEvent[] = [];
    let finished = false;
    let trialsBeforeTheEnd = 0;
    const off = events.subscribe((name, data) => {
      if (name === 'batchSize.trial') {
        trials.push(data as BatchTrialEvent);
        if (!finished) trialsBeforeTheEnd += 1;
      }
      if (name === 'script.output') output.push(data as ScriptOutputEvent);
    });
    const result = await search.search(request(mark, 'batch-events'));
    finished = true;
    off();
    expect(result.largestFitting).toBe(19);
    expect(result.trials.map((t) => [t.batchSize, t.outcome])).toEqual([[16, 'ok'], [32, 'E_OOM'], [24, 'E_OOM'], [20, 'E_OOM'], [18, 'ok'], [19, 'ok']]);
    // Live: every trial came as an event before the search answered, in order, under the request's jobId and the run's id.
    expect(trialsBeforeTheEnd).toBe(result.trials.length);
    expect(trials.map((e) => e.trial)).toEqual(result.trials);
    expect(trials.every((e) => e.jobId === 'batch-events' && e.runId === result.runId)).toBe(true);
    for (const t of result.trials.filter((x) => x.outcome === 'ok')) expect(t.samplesPerSec).toBeGreaterThan(0);
    // The OOM trials' tracebacks reached the live view, each tagged with its trial.
    const oomLines = output.filter((e) => e.stream === 'stderr' && e.line.startsWith('torch.cuda.OutOfMemoryError'));
    expect(oomLines.map((e) => e.repetition)).toEqual([2, 3, 4]);
    expect(output.every((e) => e.jobId === 'batch-events' && e.runId === result.runId)).toBe(true);
    expect(readFileSync(path.join(ws.dir, result.runDir, 'output.log'), 'utf8')).toContain('24 E torch.cuda.OutOfMemoryError');
    expect(runJson(ws.dir, result.runDir).status).toBe('completed');
    expect(jobs.running).toBe(0);
    expect(processesWithMark(mark)).toEqual([]);
  }, 180_000);

  it('stops at jobs.cancel during a trial: that trial is killed with its processes and the run is recorded cancelled', async () => {
    const { search, events, jobs } = await workbench();
    const mark = newMark();
    const seen: number[] = [];
    const cancels: { cancelled: boolean }[] = [];
    // After the first trial, cancel as soon as the second trial's python exists (it is then importing torch).
    const off = events.subscribe((name, data) => {
      if (name !== 'batchSize.trial') return;
      seen.push((data as BatchTrialEvent).trial.batchSize);
      void (async () => {
        while (processesWithMark(mark).length === 0) await sleep(10);
        cancels.push(await jobs.cancel('batch-cancel'));
      })();
    });
    const t0 = Date.now();
    const err = await search.search(request(mark, 'batch-cancel')).catch((e: unknown) => e);
    off();
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('E_CANCELLED');
    expect((err as ApiError).message).toContain('cancelled during the trial at batch 32, after 1 finished trial(s)');
    expect(seen).toEqual([16]);
    expect(cancels).toEqual([{ cancelled: true }]);
    expect(Date.now() - t0).toBeLessThan(60_000);
    expect(processesWithMark(mark)).toEqual([]);
    expect(jobs.running).toBe(0);
    expect(await jobs.cancel('batch-cancel')).toEqual({ cancelled: false });
    const runs = (await import('node:fs')).readdirSync(path.join(ws.dir, 'runs'));
    const records = runs.map((id) => runJson(ws.dir, path.join('runs', id))).filter((r) => r.status === 'cancelled');
    expect(records).toHaveLength(1);
    expect(records[0].error?.code).toBe('E_CANCELLED');
  }, 120_000);

  it('ends on a cancel that comes before its first launch has started, and a running jobId cannot be taken twice', async () => {
    const { search, jobs } = await workbench();
    const mark = newMark();
    const first = search.search(request(mark, 'batch-twice'));
    const second = await search.search(request(mark, 'batch-twice')).catch((e: unknown) => e);
    expect((second as ApiError).code).toBe('E_BAD_INPUT');
    expect((second as ApiError).message).toContain('batch-twice is already running');
    await jobs.cancel('batch-twice');
    expect(((await first.catch((e: unknown) => e)) as ApiError).code).toBe('E_CANCELLED');
    expect(processesWithMark(mark)).toEqual([]);
  }, 60_000);

  it('refuses a relative working directory, naming it, before starting anything', async () => {
    const { search } = await workbench();
    const bad = { ...request(newMark(), 'batch-relative'), target: { kind: 'script' as const, command: [PYTHON, OOM_GUARD], cwd: 'fixtures/scripts', env: {} } };
    const err = await search.search(bad).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe('E_BAD_INPUT');
    expect((err as ApiError).message).toContain('"fixtures/scripts"');
  });
});
