// Issue 10, item 8: a request the engine refuses leaves no run behind; the refusal
// comes from the engine's own checks, run before the run folder is created.
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TrainRequestSchema } from '../../src-main/api/training';
import type { Services } from '../../src-main/core/services';
import { findAddon } from '../../src-main/engine/addon-path';
import type { NativeAddon, NativeError } from '../../src-main/engine/native-addon';
import { packageRoot } from '../../src-main/engine/package-root';
import { MLP_SPEC, blobs } from '../helpers/native';
import { CLI } from '../helpers/repo';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

// The addon the engine host loads (TRAINBENCH_ADDON when set), so both sides test one build.
const addon = createRequire(__filename)(findAddon(packageRoot())) as NativeAddon;

let services: Services;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ services, cleanup } = await testServices());
});
afterAll(async () => cleanup?.());

const request = (options: object) =>
  TrainRequestSchema.parse({ spec: { family: 'mlp', input: [1, 28, 28], outputs: 10 }, data: { kind: 'fashion-mnist' }, options });
const runFolders = () => readdirSync(services.workspace.resolve('runs'));

/** How a call fails, thrown at once (a bad option) or as a rejection (found on the worker thread). */
async function refusal(call: () => Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await call();
  } catch (err) {
    return { code: (err as NativeError).code, message: (err as Error).message };
  }
  throw new Error('expected a refusal');
}

describe('Trainer.check', () => {
  const trainer = () => {
    const t = new addon.Trainer(JSON.stringify(MLP_SPEC), JSON.stringify({ seed: 1, threads: 1 }));
    t.setData('train', blobs(256, 1));
    return t;
  };

  it('refuses what train would refuse before its first step, with the same error', async () => {
    const t = trainer();
    for (const options of [{ precision: 'bf16' }, { cudaGraph: true }, { device: 'cuda:99' }, { batchSize: 512 }, { batchSize: 0 }]) {
      const json = JSON.stringify(options);
      const fromTrain = await refusal(() => t.train(json));
      expect(fromTrain, json).toMatchObject({ code: 'E_BAD_INPUT' });
      expect(await refusal(() => t.check(json)), json).toEqual(fromTrain);
    }
  });

  it('accepts good options without training a step', async () => {
    const t = trainer();
    const before = t.params();
    await expect(t.check(JSON.stringify({ batchSize: 64, epochs: 3 }))).resolves.toBeNull();
    expect(t.params()).toEqual(before);
    // The trainer is free again and trains as usual.
    await expect(t.train(JSON.stringify({ batchSize: 64, maxSteps: 2 }))).resolves.toMatchObject({ steps: 2 });
  });
});

describe('a refused training request', () => {
  it('leaves no run: a missing device, bf16 on the CPU, a batch larger than the data', async () => {
    const refused = [
      [{ device: 'cuda:99' }, "device 'cuda:99'"],
      [{ precision: 'bf16' }, "precision 'bf16' needs a CUDA device"],
      [{ batchSize: 70_000 }, 'batch size 70000'],
    ] as const;
    for (const [options, message] of refused) {
      await expect(services.training.run(request(options))).rejects.toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringContaining(message) });
    }
    expect(runFolders()).toEqual([]);
    expect(await services.router.dispatch('runs.list', {})).toEqual([]);
    // What the engine accepts is still recorded, once.
    await expect(services.training.run(request({ maxSteps: 2 }))).resolves.toMatchObject({ steps: 2 });
    expect(await services.router.dispatch('runs.list', {})).toMatchObject([{ status: 'completed' }]);
  }, 60_000);

  it('through the CLI: exits with the reason and records nothing', async () => {
    const ws = tempDir();
    const run = promisify(execFile)(process.execPath, [CLI, 'train', '--model', 'mlp', '--device', 'cuda:99', '--workspace', ws.dir]);
    await expect(run).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("trainbench: device 'cuda:99'") });
    expect(readdirSync(`${ws.dir}/runs`)).toEqual([]);
    ws.cleanup();
  }, 60_000);
});
