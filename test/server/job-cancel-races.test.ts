// Issue 41, attack round 3, F2: a jobs.cancel that comes as a wizard starts (as soon as jobs.started announces
// it) is honoured, or answered "not taken" with the job not shown cancelling; never answered false while the
// job is marked cancelling and runs on. Real services through the router, as serve mode and the app use them.
import { describe, expect, it } from 'vitest';

import type { ApiError } from '../../src-main/api/errors';
import type { JobInfo } from '../../src-main/api/jobs';
import { OptimiseRequestSchema } from '../../src-main/api/optimise';
import type { Services } from '../../src-main/core/services';
import { initialState } from '../../src-main/core/targets/engine/resumable-run';
import { saveWizardState } from '../../src-main/core/targets/wizard-state';
import { servicesPerTest } from '../helpers/services';

const services = servicesPerTest();

const mlp = { family: 'mlp', input: [1, 28, 28], outputs: 10 };
const wizard = (jobId: string) => ({
  target: { spec: mlp, data: { kind: 'fashion-mnist' }, options: { batchSize: 16, device: 'cpu' } },
  repeat: 2,
  steps: 5,
  warmupSteps: 1,
  maxTrials: 1,
  jobId,
});

/** Sends jobs.cancel for `jobId` from inside the jobs.started announcement: the earliest a window can ask. */
function cancelOnStart(s: Services, jobId: string): Promise<{ cancelled: boolean }> {
  return new Promise((resolve, reject) => {
    const off = s.events.subscribe((event, data) => {
      if (event !== 'jobs.started' || (data as JobInfo).jobId !== jobId) return;
      off();
      (s.router.dispatch('jobs.cancel', { jobId }) as Promise<{ cancelled: boolean }>).then(resolve, reject);
    });
  });
}

/** How a job ended: its error's code, or 'completed'. */
const outcome = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'completed',
    (e: ApiError) => e.code,
  );

/**
 * A cancel is honoured (the job ends E_CANCELLED) or answered not taken with the job still offering its Cancel:
 * never both "not taken" and "cancelling".
 */
async function expectHonouredOrRefused(s: Services, jobId: string, answer: { cancelled: boolean }, job: Promise<unknown>): Promise<void> {
  if (answer.cancelled) {
    expect(await outcome(job)).toBe('E_CANCELLED');
    return;
  }
  const listed = s.jobs.list().find((j) => j.jobId === jobId);
  expect(listed?.cancelling ?? false, `${jobId}: a cancel answered "not taken" but the job is shown cancelling`).toBe(false);
  // Not taken: the job still offers its Cancel, and a second one stops it.
  expect(await s.router.dispatch('jobs.cancel', { jobId })).toEqual({ cancelled: true });
  expect(await outcome(job)).toBe('E_CANCELLED');
}

describe('a jobs.cancel racing a wizard\'s start', () => {
  it('the job table answers a cancel sent on jobs.started by stopping the wizard, never "not taken" and cancelling', async () => {
    const s = await services();
    for (const method of ['optimise.start', 'optimise.resume'] as const) {
      const jobId = `table-${method.replace('.', '-')}`;
      if (method === 'optimise.resume') {
        await saveWizardState(s.workspace, { ...initialState(jobId, OptimiseRequestSchema.parse(wizard(jobId))), status: 'cancelled', message: 'stopped' });
      }
      // The registry's own answer: what jobs.cancel asks first, and what jobs.list shows every window.
      let answer: Promise<{ cancelled: boolean }> | undefined;
      const off = s.events.subscribe((event, data) => {
        if (event === 'jobs.started' && (data as JobInfo).jobId === jobId) answer = s.jobs.cancel(jobId);
      });
      const job = s.router.dispatch(method, method === 'optimise.start' ? wizard(jobId) : { jobId });
      job.catch(() => undefined);
      off();
      const taken = await answer!;
      const listed = s.jobs.list().find((j) => j.jobId === jobId);
      expect({ taken, cancelling: listed?.cancelling }, method).toEqual({ taken: { cancelled: true }, cancelling: true });
      expect(await outcome(job), method).toBe('E_CANCELLED');
    }
    expect(s.jobs.list()).toEqual([]);
    expect(s.running.running).toBe(0);
  }, 120_000);

  it('optimise.start: a cancel sent on jobs.started stops the wizard before it measures', async () => {
    const s = await services();
    const answer = cancelOnStart(s, 'start-race');
    const job = s.router.dispatch('optimise.start', wizard('start-race'));
    job.catch(() => undefined);
    expect(await answer).toEqual({ cancelled: true });
    expect(await outcome(job)).toBe('E_CANCELLED');
    expect(s.jobs.list()).toEqual([]);
    expect(s.running.running).toBe(0);
    const state = (await s.router.dispatch('optimise.state', { jobId: 'start-race' })) as { status: string; trials: unknown[] };
    expect(state.status).toBe('cancelled');
  }, 120_000);

  it('optimise.resume: a cancel sent on jobs.started stops the resumed wizard', async () => {
    const s = await services();
    const request = OptimiseRequestSchema.parse(wizard('resume-race'));
    await saveWizardState(s.workspace, { ...initialState('resume-race', request), status: 'cancelled', message: 'stopped' });
    const answer = cancelOnStart(s, 'resume-race');
    const job = s.router.dispatch('optimise.resume', { jobId: 'resume-race' });
    job.catch(() => undefined);
    expect(await answer).toEqual({ cancelled: true });
    expect(await outcome(job)).toBe('E_CANCELLED');
    expect(s.jobs.list()).toEqual([]);
    expect(s.running.running).toBe(0);
  }, 120_000);

  it('a cancel in the first milliseconds of either is honoured or answered not taken, never lost', async () => {
    const s = await services();
    const request = OptimiseRequestSchema.parse(wizard('resume-ms'));
    for (const delayMs of [0, 1, 3]) {
      await saveWizardState(s.workspace, { ...initialState('resume-ms', request), status: 'cancelled', message: 'stopped' });
      for (const [method, jobId] of [
        ['optimise.start', `start-ms-${delayMs}`],
        ['optimise.resume', 'resume-ms'],
      ] as const) {
        const job = s.router.dispatch(method, method === 'optimise.start' ? wizard(jobId) : { jobId });
        job.catch(() => undefined);
        await new Promise((r) => setTimeout(r, delayMs));
        const answer = (await s.router.dispatch('jobs.cancel', { jobId })) as { cancelled: boolean };
        await expectHonouredOrRefused(s, jobId, answer, job);
      }
    }
    expect(s.jobs.list()).toEqual([]);
  }, 180_000);
});
