// A batch-size trial that kills the engine host is a recorded outcome, and the search goes on in the
// restarted host. The host is really killed (SIGKILL) while the real engine trains the trial.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BatchSearchRequestSchema } from '../../src-main/api/batch-size';
import type { BatchSearchResult } from '../../src-main/api/batch-size';
import { BUILTIN_MODELS } from '../../src-main/api/model-spec';
import type { Services } from '../../src-main/core/services';
import { testServices } from '../helpers/services';
import { engineTrial } from '../helpers/target-detail';

let fx: { services: Services; cleanup(): Promise<void> };
beforeAll(async () => {
  fx = await testServices();
});
afterAll(() => fx.cleanup());

describe('batch-size search when a trial crashes the engine host', () => {
  it('records the crash, restarts the host and finishes the search there', async () => {
    const { services } = fx;
    const engine = services.engine;
    const train = engine.train.bind(engine);
    let calls = 0;
    // The first trial's host is killed a moment after it starts training (a seg fault would look the same).
    engine.train = (params, onEvent) => {
      if (calls++ === 0) {
        setTimeout(() => {
          const pid = engine.status().pid;
          if (pid) process.kill(pid, 'SIGKILL');
        }, 300);
      }
      return train(params, onEvent);
    };
    const request = BatchSearchRequestSchema.parse({
      spec: BUILTIN_MODELS.cnn,
      data: { kind: 'fashion-mnist' },
      options: { device: 'cpu', memoryLimitBytes: 256 * 2 ** 20, threads: 2 },
      stepsPerTrial: 20,
    });
    const result: BatchSearchResult = await services.batchSize.search(request, { allowPathsOutsideWorkspace: true });
    const [first, ...rest] = result.trials;
    expect(first.outcome).toBe('crash');
    expect(first.message).toMatch(/engine host crashed/);
    expect(first.fits).toBe(false);
    expect(engineTrial(first).backAtBaseline).toBe(true); // the restarted host holds nothing
    expect(rest.length).toBeGreaterThan(0);
    expect(rest.some((t) => t.outcome === 'ok')).toBe(true);
    expect(result.largestFitting).not.toBeNull();
    expect(result.largestFitting!).toBeLessThan(first.batchSize); // a crash bounds the search like a failure
    expect(engine.status()).toMatchObject({ state: 'ready', restarts: 1 });
  }, 180_000);
});
