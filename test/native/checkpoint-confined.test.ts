// Issue 41, re-attack finding 3: a run folder swapped for a link while the engine trains must not take the checkpoint
// outside the workspace. The engine writes into a private folder; the file is copied in through the run folder held
// open, which refuses the link.
import { existsSync, mkdirSync, readdirSync, renameSync, symlinkSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { MIN_EVENT_INTERVAL_MS, TrainRequestSchema } from '../../src-main/api/training';
import type { Services } from '../../src-main/core/services';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

let services: Services;
let cleanup: () => Promise<void>;
const outside = tempDir('tb-outside-');
// The private folders are made in the temp folder: this file's own, so it can see they are removed.
const staging = tempDir('tb-staging-');
beforeAll(async () => {
  ({ services, cleanup } = await testServices());
  process.env.TMPDIR = staging.dir;
});
afterAll(async () => {
  await cleanup?.();
  outside.cleanup();
  staging.cleanup();
});

const request = TrainRequestSchema.parse({
  spec: { family: 'mlp', input: [1, 28, 28], outputs: 10 },
  data: { kind: 'fashion-mnist' },
  options: { maxSteps: 30, eventIntervalMs: MIN_EVENT_INTERVAL_MS },
});

describe('the engine checkpoint stays in the workspace', () => {
  it('a run folder swapped for a link during training gets no checkpoint outside, and the run fails', async () => {
    let swapped = false;
    let runId = '';
    const run = services.training.run(request, {
      onStart: (id) => (runId = id),
      onEvent: (e) => {
        if (swapped || e.type !== 'step' || !runId) return;
        swapped = true;
        const folder = services.workspace.resolve(`runs/${runId}`);
        mkdirSync(path.join(outside.dir, 'moved'), { recursive: true });
        renameSync(folder, path.join(outside.dir, 'moved', 'run'));
        symlinkSync(outside.dir, folder);
      },
    });
    await expect(run).rejects.toThrow();
    expect(swapped).toBe(true);
    expect(existsSync(path.join(outside.dir, 'checkpoint.safetensors'))).toBe(false);
    expect(readdirSync(outside.dir).sort()).toEqual(['moved']);
    expect(readdirSync(staging.dir)).toEqual([]); // the private folder is removed whatever happened
  });

  it('an untouched run keeps its checkpoint in its folder', async () => {
    const result = await services.training.run(request);
    expect(existsSync(path.join(services.workspace.resolve(result.runDir), 'checkpoint.safetensors'))).toBe(true);
  });
});
