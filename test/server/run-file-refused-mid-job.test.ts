// Issue 41, re-attack of F3 (2026-12-07): a link planted in a job's run folder, where the job opens a file only once
// its measured steps begin (a benchmark's telemetry-rep1.jsonl), was refused inside the engine's event listener or the
// probe channel's message handler. The refusal was thrown from there into Node's event loop and ended the process:
// serve mode with every job in it. It must end that job alone, with the refusal, and leave nothing outside.
import { mkdirSync, readdirSync, renameSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import type { ApiError } from '../../src-main/api/errors';
import { servicesPerTest } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';
import { PYTHON, SCRIPTS } from '../script/script-helpers';

const newServices = servicesPerTest();
const small = { family: 'mlp', input: [28, 28], outputs: 10, hidden: [8] };

/** Plants runs/<run>/telemetry-rep1.jsonl as a link to a canary folder outside, at the job's first progress that names its run. */
function plantAtFirstProgress(s: Awaited<ReturnType<typeof newServices>>, canary: string) {
  const planted: string[] = [];
  const off = s.events.subscribe((event, data) => {
    const runId = (data as { runId?: string | null }).runId;
    if (event !== 'benchmark.progress' || !runId || planted.length) return;
    const link = path.join(s.workspace.root, 'runs', runId, 'telemetry-rep1.jsonl');
    symlinkSync(path.join(canary, 'planted.jsonl'), link);
    planted.push(runId);
  });
  return { planted, off };
}

const refusal = (runId: string) => `path "runs/${runId}/telemetry-rep1.jsonl" leads outside the workspace through a link; copy the files into the workspace instead`;

describe('a write refused in the middle of a job', () => {
  it('ends an engine benchmark with the refusal, not the process; the engine trains the next job', async () => {
    const s = await newServices();
    const canary = tempDir();
    mkdirSync(canary.dir, { recursive: true });
    const { planted, off } = plantAtFirstProgress(s, canary.dir);
    // Many warm-up steps: the link is in place long before the first measured step opens the file.
    const err = await s.router.dispatch('benchmark.training', { spec: small, data: { kind: 'fashion-mnist' }, warmupSteps: 200, steps: 20, repeat: 2 }).then(
      () => null,
      (e: ApiError) => e,
    );
    off();
    expect(planted).toHaveLength(1);
    expect(err && { code: err.code, message: err.message }).toEqual({ code: 'E_BAD_INPUT', message: refusal(planted[0]) });
    expect(readdirSync(canary.dir)).toEqual([]);
    const detail = await s.router.dispatch('runs.get', { id: planted[0] });
    expect(detail).toMatchObject({ summary: { status: 'failed' }, record: { error: { code: 'E_BAD_INPUT' } } });
    // The engine stopped training the refused run: the next job runs at once and completes.
    const next = (await s.router.dispatch('benchmark.training', { spec: small, data: { kind: 'fashion-mnist' }, warmupSteps: 2, steps: 5, repeat: 1 })) as { repetitions: unknown[] };
    expect(next.repetitions).toHaveLength(1);
    expect(s.running.running).toBe(0);
  }, 120_000);

  it('ends a script benchmark with the refusal, its script stopped, not the process', async () => {
    const s = await newServices({ allowScripts: true });
    const canary = tempDir();
    mkdirSync(canary.dir, { recursive: true });
    const { planted, off } = plantAtFirstProgress(s, canary.dir);
    const target = { kind: 'script', command: [PYTHON, path.join(SCRIPTS, 'tiny_train.py'), 'plain'], cwd: SCRIPTS, env: { STEPS: '100000' } };
    const started = Date.now();
    const err = await s.router.dispatch('benchmark.training', { target, warmupSteps: 3, steps: 5, repeat: 2 }).then(
      () => null,
      (e: ApiError) => e,
    );
    off();
    expect(planted).toHaveLength(1);
    expect(err && { code: err.code, message: err.message }).toEqual({ code: 'E_BAD_INPUT', message: refusal(planted[0]) });
    // Stopped at the refusal: 100,000 steps of the script would take minutes.
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(readdirSync(canary.dir)).toEqual([]);
    expect(s.running.running).toBe(0);
  }, 120_000);

  it("ends an engine optimisation whose state cannot be saved, its run recorded as failed (its heartbeat would say running for ever)", async () => {
    const s = await newServices();
    const outside = tempDir();
    const jobId = 'opt-unsaved';
    let runId: string | null = null;
    let movedAt = 0;
    const off = s.events.subscribe((event, data) => {
      const p = data as { jobId?: string; runId?: string | null };
      if (event !== 'optimise.progress' || p.jobId !== jobId || !p.runId || runId) return;
      runId = p.runId;
      // The wizard's folder swapped for a link to a folder outside: every later save of its state is refused.
      const folder = path.join(s.workspace.root, 'optimise', jobId);
      renameSync(folder, path.join(outside.dir, 'moved'));
      symlinkSync(path.join(outside.dir, 'moved'), folder);
      movedAt = statSync(path.join(outside.dir, 'moved', 'state.json')).mtimeMs;
    });
    const target = { spec: small, data: { kind: 'fashion-mnist' }, options: { batchSize: 64, device: 'cpu', threads: 1 } };
    const err = await s.router.dispatch('optimise.start', { target, repeat: 2, steps: 300, warmupSteps: 2, maxTrials: 2, batchSearch: false, jobId }).then(
      () => null,
      (e: ApiError) => e,
    );
    off();
    expect(runId).not.toBeNull();
    expect(err?.code).toBe('E_BAD_INPUT');
    expect(err?.message).toContain('leads outside the workspace through a link');
    const detail = await s.router.dispatch('runs.get', { id: runId! });
    expect(detail).toMatchObject({ summary: { status: 'failed' }, record: { error: { code: 'E_BAD_INPUT' } } });
    // Nothing written through the link.
    expect(readdirSync(path.join(outside.dir, 'moved'))).toEqual(['state.json']);
    expect(statSync(path.join(outside.dir, 'moved', 'state.json')).mtimeMs).toBe(movedAt);
    expect(s.running.running).toBe(0);
  }, 120_000);
});
