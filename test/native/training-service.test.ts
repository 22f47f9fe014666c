// Training through the real stack: services -> supervisor -> engine host -> addon.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { TrainEvent } from '../../src-main/api/training';
import { MIN_EVENT_INTERVAL_MS, TrainRequestSchema } from '../../src-main/api/training';
import type { Services } from '../../src-main/core/services';
import { testServices } from '../helpers/services';
import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import { jobIdAt } from '../../src-main/api/ids';

let services: Services;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ services, cleanup } = await testServices());
});
afterAll(async () => cleanup?.());

const request = (options: object) =>
  TrainRequestSchema.parse({ spec: { family: 'mlp', input: [1, 28, 28], outputs: 10 }, data: { kind: 'fashion-mnist' }, options });

describe('training service', () => {
  it('records a completed run: run.json with the result, events.jsonl, checkpoint', async () => {
    const seen: TrainEvent[] = [];
    const progress: string[] = [];
    const off = services.events.subscribe((name) => progress.push(name));
    const result = await services.training.run(request({ maxSteps: 30, eventIntervalMs: MIN_EVENT_INTERVAL_MS }), { onEvent: (e) => seen.push(e) });
    off();
    expect(result.steps).toBe(30);
    expect(result.target.test?.samples).toBe(10000);
    const steps = seen.filter((e) => e.type === 'step');
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.at(-1)).toMatchObject({ globalStep: 30 });
    expect(progress.filter((n) => n === 'train.progress').length).toBe(seen.length);

    const dir = services.workspace.resolve(result.runDir);
    const run = JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8'));
    expect(run).toMatchObject({ schemaVersion: RUN_SCHEMA_VERSION, id: result.runId, kind: 'train', status: 'completed', result: { steps: 30 } });
    expect(run.environment.cpus).toBeGreaterThan(0);
    const events = readFileSync(path.join(dir, 'events.jsonl'), 'utf8').trim().split('\n');
    expect(events).toHaveLength(seen.length);
    expect(existsSync(path.join(dir, 'checkpoint.safetensors'))).toBe(true);
  });

  it('cancels a run from the contract and records it as cancelled', async () => {
    let runId = '';
    let asked = false;
    const run = services.training.run(request({ epochs: 50, eventIntervalMs: MIN_EVENT_INTERVAL_MS }), {
      onStart: (id) => (runId = id),
      onEvent: (e) => {
        if (e.type === 'step' && e.globalStep >= 3 && !asked) {
          asked = true;
          void services.router.dispatch('jobs.cancel', { jobId: runId });
        }
      },
    });
    await expect(run).rejects.toMatchObject({ code: 'E_CANCELLED' });
    const record = JSON.parse(readFileSync(path.join(services.workspace.resolve(`runs/${runId}`), 'run.json'), 'utf8'));
    expect(record).toMatchObject({ status: 'cancelled', error: { code: 'E_CANCELLED' } });
    // The engine host survives and trains again.
    await expect(services.training.run(request({ maxSteps: 2 }))).resolves.toMatchObject({ steps: 2 });
  });

  it('keeps UI requests inside the workspace', async () => {
    const err = services.router.dispatch('train.run', {
      spec: { family: 'mlp', input: [784], outputs: 10 },
      data: { kind: 'idx', train: { images: '/etc/passwd', labels: '../x' } },
    });
    await expect(err).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringContaining('outside the workspace') });
  });

  it('trains on cuda:0 where the engine sees a GPU, and elsewhere refuses it with the reason', async () => {
    const devices = await services.engine.devices();
    const run = services.training.run(request({ device: 'cuda:0', maxSteps: 1 }));
    if (devices.cuda.available) {
      await expect(run).resolves.toMatchObject({ steps: 1, memory: { device: 'cuda:0' } });
    } else {
      await expect(run).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringContaining(devices.cuda.reason ?? '') });
    }
  });

  it('answers model.info through the contract', async () => {
    const info = await services.router.dispatch('model.info', { spec: { family: 'bottleneck_resnet' } });
    expect(info).toMatchObject({ family: 'bottleneck_resnet', params: 2578249 });
  });

  it('refuses step events more often than the contract allows (a flood of them stalled serve mode)', async () => {
    await expect(
      services.router.dispatch('train.run', { spec: { family: 'mlp', input: [1, 28, 28], outputs: 10 }, data: { kind: 'fashion-mnist' }, options: { eventIntervalMs: 0 } }),
    ).rejects.toMatchObject({ code: 'E_BAD_REQUEST', message: expect.stringContaining('eventIntervalMs') });
  });

  it('records a run under the id its caller chose, so a UI can tell its own events apart, and refuses an id that is taken', async () => {
    const runId = jobIdAt(new Date(), 'c0ffee');
    const events: string[] = [];
    const off = services.events.subscribe((name, data) => {
      if (name === 'train.progress') events.push((data as { jobId: string }).jobId);
    });
    const result = await services.training.run(TrainRequestSchema.parse({ ...request({ maxSteps: 2 }), jobId: runId }));
    off();
    expect(result.runId).toBe(runId);
    expect(new Set(events)).toEqual(new Set([runId]));
    await expect(services.training.run(TrainRequestSchema.parse({ ...request({ maxSteps: 2 }), jobId: runId }))).rejects.toMatchObject({
      code: 'E_BAD_INPUT',
      message: expect.stringContaining('exists already'),
    });
    expect(JSON.parse(readFileSync(path.join(services.workspace.resolve(`runs/${runId}`), 'run.json'), 'utf8'))).toMatchObject({ status: 'completed' });
  });
});
