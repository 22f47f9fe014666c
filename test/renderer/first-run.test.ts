// @vitest-environment happy-dom
// The first-run path (issue 27 item 8): what an empty workspace is, the built-in example as `npm start` optimises
// it, and the Optimise store taking a first step (the target and fields chosen, nothing started).
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';

import type { Devices } from '../../src-main/api/devices';
import type { RunSummary } from '../../src-main/api/training';
import { useOptimiseStore } from '../../src-renderer/stores/optimise';
import { autoDevice, BUILT_IN_EXAMPLE, exampleOptimiseForm, firstStepOf, isEmptyWorkspace } from '../../src-renderer/view-models/first-run';
import { optimiseRequest } from '../../src-renderer/view-models/optimise-form';
import { REPO_ROOT } from '../helpers/repo';
import { installFakeClient, ok } from './fake-client';

beforeEach(() => setActivePinia(createPinia()));

const cpuOnly = { cpu: { name: 'cpu', arch: 'x64', logicalCores: 2, simd: [] }, cuda: { compiled: true, available: false, reason: 'no driver', driverVersion: 0, runtimeVersion: 0, devices: [] } } as Devices;
const gpu = (index: number): Devices => ({
  ...cpuOnly,
  cuda: { ...cpuOnly.cuda, available: true, reason: null, devices: [{ index, name: 'H100', totalMemoryBytes: 8e10, computeCapability: '9.0', multiprocessors: 132, pciBusId: '0000:01:00.0' }] },
});

describe('first-run view-model', () => {
  it('is the example `npm start` optimises (package.json start script, flag for flag)', () => {
    const start = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
    const flag = (name: string) => new RegExp(`--${name} (\\S+)`).exec(start)?.[1];
    expect(flag('model')).toBe(BUILT_IN_EXAMPLE.model);
    expect(flag('data')).toBe(BUILT_IN_EXAMPLE.data);
    expect(flag('device')).toBe('auto');
    expect(Number(flag('warmup-steps'))).toBe(BUILT_IN_EXAMPLE.warmupSteps);
    expect(Number(flag('steps'))).toBe(BUILT_IN_EXAMPLE.steps);
    expect(Number(flag('min-window'))).toBe(BUILT_IN_EXAMPLE.minWindowSeconds);
    expect(Number(flag('max-trials'))).toBe(BUILT_IN_EXAMPLE.maxTrials);
  });

  it('resolves auto as the engine does, and fills a form the contract accepts', () => {
    expect(autoDevice(null)).toBe('cpu');
    expect(autoDevice(cpuOnly)).toBe('cpu');
    expect(autoDevice(gpu(0))).toBe('cuda:0');
    expect(autoDevice(gpu(3))).toBe('cuda:3');
    const form = exampleOptimiseForm(gpu(0));
    expect(form).toMatchObject({ model: 'bottleneck_resnet', data: 'example-board', device: 'cuda:0', warmupSteps: 2, steps: 8, minWindowSeconds: 1, maxTrials: 3, batchSize: 256 });
    const { request, errors } = optimiseRequest(form);
    expect(errors).toBeNull();
    expect(request?.target.data).toEqual({ kind: 'example-board' });
  });

  it('calls a workspace empty only without any run, and reads only the three first steps from a query', () => {
    expect(isEmptyWorkspace([])).toBe(true);
    expect(isEmptyWorkspace([{ id: 'x' } as RunSummary])).toBe(false);
    expect(['example', 'script', 'import', 'other', undefined, ['example']].map(firstStepOf)).toEqual(['example', 'script', 'import', null, null, null]);
  });
});

describe('optimise store: a first step', () => {
  it('chooses the engine target on the example, or the Script target, and starts nothing', () => {
    const fake = installFakeClient(() => ok([]));
    const store = useOptimiseStore();
    store.target = 'script';
    store.invalid = { steps: 'bad' };
    expect(store.choose('example', cpuOnly)).toBe(true);
    expect(store.target).toBe('engine');
    expect(store.form).toMatchObject({ model: 'bottleneck_resnet', data: 'example-board', device: 'cpu', steps: 8 });
    expect(store.invalid).toEqual({});
    const form = store.form;
    expect(store.choose('script', cpuOnly)).toBe(true);
    expect(store.target).toBe('script');
    // The engine form stays as it was, for when the person switches back.
    expect(store.form).toEqual(form);
    expect(fake.calls.filter((c) => c.method.endsWith('.start'))).toEqual([]);
  });

  it('leaves a wizard that runs from this window alone', () => {
    installFakeClient(() => ok([]));
    const store = useOptimiseStore();
    store.running = true;
    expect(store.choose('example', cpuOnly)).toBe(false);
    expect(store.form.model).toBe('mlp');
  });
});
