// Issue 14: the script target's service as the API uses it: live script.output events, cancel, and torch-wide flag overrides.
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import type { ScriptOutputEvent } from '../../src-main/api/script-target';
import { ScriptBenchmarkRequestSchema } from '../../src-main/api/script-target';
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

/** A workbench over the test's workspace: the benchmark capability, its events and its running jobs. */
async function workbench() {
  services ??= await createServices({ workspaceDir: ws.dir });
  return { scripts: services.benchmarks, events: services.events, jobs: services.running };
}

describe('the benchmark on a script target', () => {
  it('streams the script output as script.output events and cancels a running script with its children', async () => {
    const { scripts, events, jobs } = await workbench();
    const mark = newMark();
    const lines: ScriptOutputEvent[] = [];
    const unsubscribe = events.subscribe((name, data) => {
      if (name !== 'script.output') return;
      const e = data as ScriptOutputEvent;
      lines.push(e);
      if (e.line === 'hanging now') void jobs.cancel('cancel-test');
    });
    const request = ScriptBenchmarkRequestSchema.parse({
      target: { kind: 'script', command: [PYTHON, path.join(SCRIPTS, 'tiny_train.py'), 'hang'], cwd: SCRIPTS, env: { TB_TEST_MARK: mark } },
      repeat: 2,
      warmupSteps: 1,
      jobId: 'cancel-test',
    });
    const t0 = Date.now();
    const err = await scripts.run(request).catch((e: unknown) => e);
    unsubscribe();
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('E_CANCELLED');
    expect((err as ApiError).message).toContain('cancelled after 2 step(s)');
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(lines.map((l) => l.line)).toContain('hanging now');
    expect(lines.every((l) => l.jobId === 'cancel-test' && l.repetition === 1 && l.runId !== null)).toBe(true);
    expect(processesWithMark(mark)).toEqual([]);
    expect(await jobs.cancel('cancel-test')).toEqual({ cancelled: false });
  }, 60_000);

  it('cancels every running script when the shell closes (cancelAll, called by services.dispose)', async () => {
    const { scripts, events, jobs } = await workbench();
    const mark = newMark();
    const unsubscribe = events.subscribe((name, data) => {
      if (name === 'script.output' && (data as ScriptOutputEvent).line === 'hanging now') jobs.cancelAll();
    });
    const request = ScriptBenchmarkRequestSchema.parse({
      target: { kind: 'script', command: [PYTHON, path.join(SCRIPTS, 'tiny_train.py'), 'hang'], cwd: SCRIPTS, env: { TB_TEST_MARK: mark } },
      repeat: 1,
      warmupSteps: 1,
      jobId: 'closing-test',
    });
    const err = await scripts.run(request).catch((e: unknown) => e);
    unsubscribe();
    expect((err as ApiError).code).toBe('E_CANCELLED');
    expect(processesWithMark(mark)).toEqual([]);
  }, 60_000);

  it('applies cudnn.benchmark and matmul.precision and reports them as applied by torch', async () => {
    const { scripts } = await workbench();
    const result = await scripts.run(
      ScriptBenchmarkRequestSchema.parse({
        target: { kind: 'script', command: [PYTHON, path.join(SCRIPTS, 'tiny_train.py'), 'plain'], cwd: SCRIPTS, env: {} },
        overrides: { 'cudnn.benchmark': true, 'matmul.precision': 'medium' },
        warmupSteps: 1,
        steps: 3,
        repeat: 1,
      }),
    );
    expect(result.target.applied).toEqual(
      expect.arrayContaining([
        { key: 'cudnn.benchmark', value: true, where: 'torch', rank: 0 },
        { key: 'matmul.precision', value: 'medium', where: 'torch', rank: 0 },
      ]),
    );
    expect(result.steps).toBe(3);
  }, 60_000);
});
