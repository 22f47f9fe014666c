// Re-attack 12 (issue 41, F2): a jobs.cancel that came after the engine's last training step, while the run was
// being recorded, was answered "cancelled" and the run was then recorded completed: the cancel was lost. A cancel
// is either honoured (the run ends cancelled) or answered not taken, never both taken and ignored.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { closedToCancel, RunningJobs } from '../../src-main/core/jobs/running-jobs';
import { createServices, type Services } from '../../src-main/core/services';
import { tempDir } from '../helpers/temp-dir';

const ws = tempDir();
let services: Services | null = null;
afterEach(async () => {
  await services?.dispose();
  services = null;
});

describe('a cancel at the end of a job', () => {
  it('RunningJobs: taken before the last cancellation point, answered not taken after it', async () => {
    const jobs = new RunningJobs();
    const early = jobs.open('early', 'a job');
    expect(await jobs.cancel('early')).toEqual({ cancelled: true });
    expect(closedToCancel(early)).toBe(true);
    const late = jobs.open('late', 'a job');
    expect(closedToCancel(late)).toBe(false);
    expect(await jobs.cancel('late')).toEqual({ cancelled: false });
    expect(late.cancelled).toBe(false);
  });

  it('train.run: a cancel after the engine returned its summary is honoured, the run recorded cancelled', async () => {
    services = await createServices({ workspaceDir: ws.dir });
    const s = services;
    const jobId = '20261206-040000-late01';
    let answer: { cancelled: boolean } | null = null;
    // The cancel is sent the moment the engine's training has returned, before the run is recorded.
    const train = s.engine.train.bind(s.engine);
    s.engine.train = (async (...args: Parameters<typeof train>) => {
      const summary = await train(...args);
      answer = (await s.router.dispatch('jobs.cancel', { jobId })) as { cancelled: boolean };
      return summary;
    }) as typeof train;
    const outcome = await s.router
      .dispatch('train.run', { spec: { family: 'mlp', input: [1, 28, 28], outputs: 10, hidden: [16] }, data: { kind: 'fashion-mnist' }, options: { maxSteps: 3, batchSize: 32 }, jobId })
      .then(
        () => 'completed',
        (err: { code?: string; message?: string }) => `${err.code}: ${err.message}`,
      );
    expect(answer).toEqual({ cancelled: true });
    expect(outcome).toBe(`E_CANCELLED: run ${jobId} was cancelled after its last step, before its result was recorded`);
    expect(JSON.parse(readFileSync(path.join(ws.dir, 'runs', jobId, 'run.json'), 'utf8'))).toMatchObject({ status: 'cancelled', error: { code: 'E_CANCELLED' } });
  }, 120_000);
});
