// A batch-size trial measures its steps after the cold first one, whatever the batch (ADR 0034): with 60
// records drawn per epoch, batch 60 is one step an epoch, and its trial still trains stepsPerTrial steps
// (it once trained one, and reported that cold step's rate as its throughput); the user's batch is measured
// too, below the memory model's seed. The real engine on the CPU under a memory limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BatchSearchRequestSchema } from '../../src-main/api/batch-size';
import { BUILTIN_MODELS } from '../../src-main/api/model-spec';
import { EngineTrainSummarySchema, TrainStepEventSchema, type TrainStepEvent } from '../../src-main/api/training';
import type { Services } from '../../src-main/core/services';
import { testServices } from '../helpers/services';
import { engineSearch } from '../helpers/target-detail';

let fx: { services: Services; cleanup(): Promise<void> };
beforeAll(async () => {
  fx = await testServices();
});
afterAll(() => fx.cleanup());

describe('batch-size trial near the dataset size', () => {
  it('trains stepsPerTrial steps at a batch of one step per epoch, and times the steps after the first', async () => {
    const { services } = fx;
    const engine = services.engine;
    const train = engine.train.bind(engine);
    const calls: { batchSize: number; epochs: number; steps: TrainStepEvent[]; trained: number }[] = [];
    engine.train = async (params, onEvent) => {
      const call = { batchSize: params.options.batchSize ?? 0, epochs: params.options.epochs ?? 1, steps: [] as TrainStepEvent[], trained: 0 };
      calls.push(call);
      const raw = await train(params, (e) => {
        const step = TrainStepEventSchema.safeParse(e);
        if (step.success) call.steps.push(step.data);
        onEvent(e);
      });
      call.trained = EngineTrainSummarySchema.pick({ steps: true }).parse(raw).steps;
      return raw;
    };
    try {
      const request = BatchSearchRequestSchema.parse({
        spec: BUILTIN_MODELS.mlp,
        data: { kind: 'fashion-mnist' },
        // 60 of the 60,000 records an epoch: every batch fits, so the search climbs to the data's 60.
        options: { device: 'cpu', memoryLimitBytes: 512 * 2 ** 20, threads: 2, sampleRatio: 0.001, batchSize: 16 },
        stepsPerTrial: 3,
      });
      const result = await services.batchSize.search(request, { allowPathsOutsideWorkspace: true });
      expect(engineSearch(result).maxBatch).toBe(60);
      expect(engineSearch(result).seedBatch).toBe(32);
      // Up from the seed to the data, then the user's batch below the seed.
      expect(result.trials.map((t) => t.batchSize)).toEqual([32, 60, 16]);

      const whole = calls.find((c) => c.batchSize === 60)!;
      expect(whole.epochs).toBe(3);
      expect(whole.trained).toBe(3);
      expect(whole.steps.map((s) => s.globalStep)).toEqual([1, 2, 3]); // each epoch's end is an event: two windows after the cold one
      const trial = result.trials.find((t) => t.batchSize === 60)!;
      expect(trial.outcome).toBe('ok');
      expect(trial.samplesPerSec).not.toBeNull();
      expect(trial.message).toBeNull();
      for (const c of calls) expect(c.trained).toBe(3);
      for (const t of result.trials) expect(t.samplesPerSec).toBeGreaterThan(0);
      expect(result.recommended).not.toBeNull();
    } finally {
      engine.train = train;
    }
  }, 180_000);
});
