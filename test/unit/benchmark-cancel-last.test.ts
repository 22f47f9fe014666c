// A cancel taken while a benchmark's last repetition runs (jobs.cancel answered "cancelled") must end the run
// cancelled, not completed with a result (re-attack of issue 41: it completed 100-180 ms later).
import { describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import { benchmarkRepetitions } from '../../src-main/core/benchmarks/benchmark-loop';
import type { BenchmarkPlan } from '../../src-main/core/targets/target-runner';
import type { RunRecord } from '../../src-main/core/workspace/run-store';

describe('benchmark loop', () => {
  it('ends cancelled when the cancel comes during the last repetition', async () => {
    let cancelled = false;
    const statuses: string[] = [];
    const run = {
      id: 'r',
      appendEvent: () => undefined,
      finish: async (status: string) => void statuses.push(status),
      fail: async (err: unknown) => {
        statuses.push(err instanceof ApiError && err.code === 'E_CANCELLED' ? 'cancelled' : 'failed');
        return err as ApiError;
      },
    } as unknown as RunRecord;
    const plan = {
      what: 'benchmark',
      unit: 'repetition',
      repetition: async (i: number) => {
        if (i === 2) cancelled = true; // the cancel arrives while the last repetition trains
        return i;
      },
      recorded: () => ({ event: {}, samplesPerSec: 1 }),
      summarize: async () => ({ done: true }),
    } as unknown as BenchmarkPlan<number>;
    const err = await benchmarkRepetitions(plan, run, { repeat: 2, totalSteps: 10, cancelled: () => cancelled, closeToCancel: () => cancelled, progress: () => undefined }).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe('E_CANCELLED');
    expect((err as ApiError).message).toBe('the benchmark was cancelled after its last repetition, before its summary');
    expect(statuses).toEqual(['cancelled']);
  });
});
