// The engine's batch-size search says where it stands before its first trial ends (issue 27 item 5): a named
// search tells of its preparation at once, then of each trial as it starts (its number and batch, elapsed time),
// before that trial's result; the real engine on the CPU under a memory limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { BatchSearchProgress, BatchTrial } from '../../src-main/api/batch-size';
import { BatchSearchProgressSchema, BatchSearchRequestSchema } from '../../src-main/api/batch-size';
import { BUILTIN_MODELS } from '../../src-main/api/model-spec';
import type { Services } from '../../src-main/core/services';
import { testServices } from '../helpers/services';

let fx: { services: Services; cleanup(): Promise<void> };
beforeAll(async () => {
  fx = await testServices();
});
afterAll(() => fx.cleanup());

describe('batch-size search progress', () => {
  it('tells of the preparation, then of each trial as it starts, before its result', async () => {
    const { services } = fx;
    const seen: ({ kind: 'progress'; p: BatchSearchProgress } | { kind: 'trial'; t: BatchTrial })[] = [];
    const off = services.events.subscribe((event, data) => {
      if (event === 'batchSize.progress') seen.push({ kind: 'progress', p: BatchSearchProgressSchema.parse(data) });
      if (event === 'batchSize.trial') seen.push({ kind: 'trial', t: (data as { trial: BatchTrial }).trial });
    });
    try {
      const request = BatchSearchRequestSchema.parse({
        spec: BUILTIN_MODELS.cnn,
        data: { kind: 'fashion-mnist' },
        options: { device: 'cpu', memoryLimitBytes: 128 * 2 ** 20, threads: 2 },
        stepsPerTrial: 3,
        jobId: 'progress-test',
      });
      const result = await services.batchSize.search(request, { allowPathsOutsideWorkspace: true });
      expect(result.trials.length).toBeGreaterThanOrEqual(2);

      const first = seen[0];
      expect(first.kind === 'progress' && first.p).toMatchObject({ jobId: 'progress-test', phase: 'preparing', trial: null, step: 0, steps: 3 });
      // Every trial's start is told before its result, with its number and batch, counting from its own start.
      for (const t of result.trials) {
        const resultAt = seen.findIndex((s) => s.kind === 'trial' && s.t.index === t.index);
        const startAt = seen.findIndex((s) => s.kind === 'progress' && s.p.trial?.index === t.index);
        expect(startAt).toBeGreaterThan(-1);
        expect(startAt).toBeLessThan(resultAt);
        const start = (seen[startAt] as { p: BatchSearchProgress }).p;
        expect(start).toMatchObject({ phase: 'trial', trial: { index: t.index, batchSize: t.batchSize, accumulation: 1 }, step: 0 });
        expect(start.trialSeconds).toBeLessThan(1);
      }
      const progress = seen.flatMap((s) => (s.kind === 'progress' ? [s.p] : []));
      const elapsed = progress.map((p) => p.elapsedSeconds);
      expect(elapsed).toEqual([...elapsed].sort((a, b) => a - b));
      expect(progress.every((p) => p.jobId === 'progress-test' && p.step <= p.steps)).toBe(true);
    } finally {
      off();
    }
  }, 120_000);
});
