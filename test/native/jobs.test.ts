// The job model through the real stack: a run started by one client is listed, followed and cancelled by another.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { JobEndedEvent, JobInfo } from '../../src-main/api/jobs';
import type { Services } from '../../src-main/core/services';
import { testServices } from '../helpers/services';

let services: Services;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ services, cleanup } = await testServices());
});
afterAll(async () => cleanup?.());

const until = async (what: string, ok: () => Promise<boolean>, ms = 60_000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('jobs through the router', () => {
  it('lists a running training with its steps so far, cancels it by id, and tells every client how it ended', async () => {
    const ended: JobEndedEvent[] = [];
    const off = services.events.subscribe((name, data) => name === 'jobs.ended' && ended.push(data as JobEndedEvent));
    const run = services.router.dispatch('train.run', {
      spec: { family: 'mlp', input: [1, 28, 28], outputs: 10 },
      data: { kind: 'fashion-mnist' },
      options: { epochs: 50, eventIntervalMs: 50 },
    });
    run.catch(() => undefined);
    let listed: JobInfo | undefined;
    await until('a listed step', async () => {
      [listed] = (await services.router.dispatch('jobs.list', {})) as JobInfo[];
      return !!listed?.events.some((e) => e.event === 'train.progress' && (e.data as { event: { type: string } }).event.type === 'step');
    });
    expect(listed).toMatchObject({ method: 'train.run', kind: 'train', target: 'engine', cancelling: false, request: { jobId: listed!.jobId } });
    expect(await services.router.dispatch('jobs.cancel', { jobId: listed!.jobId })).toEqual({ cancelled: true });
    await expect(run).rejects.toMatchObject({ code: 'E_CANCELLED' });
    off();
    expect(ended).toEqual([expect.objectContaining({ jobId: listed!.jobId, ok: false, error: expect.objectContaining({ code: 'E_CANCELLED' }) })]);
    expect(await services.router.dispatch('jobs.list', {})).toEqual([]);
    expect(await services.router.dispatch('jobs.cancel', { jobId: listed!.jobId })).toEqual({ cancelled: false });
  }, 90_000);

  it('stops a run started in-process (the CLI, a test) through jobs.cancel too', async () => {
    let runId = '';
    const run = services.training.run(
      { spec: { family: 'mlp', input: [1, 28, 28], outputs: 10 }, data: { kind: 'fashion-mnist' }, options: { epochs: 50, eventIntervalMs: 50 } } as never,
      { onStart: (id) => (runId = id) },
    );
    await until('the run to start', async () => runId !== '');
    await until('a step', async () => (await services.router.dispatch('jobs.cancel', { jobId: runId }) as { cancelled: boolean }).cancelled);
    await expect(run).rejects.toMatchObject({ code: 'E_CANCELLED' });
  }, 90_000);
});
