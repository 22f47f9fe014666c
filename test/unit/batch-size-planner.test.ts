// The batch-size search's decisions, driven by made-up outcomes: no engine (the real searches, cancels included, run in
// test/native, test/script and the batch-size e2e).
import { describe, expect, it } from 'vitest';

import type { BatchTrial } from '../../src-main/api/batch-size';
import { ApiError } from '../../src-main/api/errors';
import type { TrainStepEvent } from '../../src-main/api/training';
import type { PlannedPoint } from '../../src-main/core/batch-size/planner';
import { granularity, nextCandidate, pickBatches } from '../../src-main/core/batch-size/planner';
import { searchBatches } from '../../src-main/core/batch-size/search-loop';
import { microBatchFor, seedBatch, trialEpochs } from '../../src-main/core/targets/engine/batch-memory';
import { trialSamplesPerSec } from '../../src-main/core/targets/engine/batch-trial-throughput';
import { verdictLine } from '../../src-main/core/targets/engine/batch-verdict';

/** Runs the planner against a device where batches up to `fitsUpTo` fit, recording what it tries. */
function search(seed: number, maxBatch: number, outcome: (b: number) => PlannedPoint, ladderFrom?: number): number[] {
  const points: PlannedPoint[] = [];
  for (let b = nextCandidate(seed, maxBatch, points, ladderFrom); b !== null; b = nextCandidate(seed, maxBatch, points, ladderFrom)) {
    points.push(outcome(b));
    if (points.length > 64) throw new Error('the search does not end');
  }
  return points.map((p) => p.batchSize);
}
const upTo = (limit: number, sps: (b: number) => number = (b) => 1000 * Math.log2(b + 1)) => (b: number): PlannedPoint => ({
  batchSize: b,
  fits: b <= limit,
  samplesPerSec: b <= limit ? sps(b) : null,
});

describe('seedBatch', () => {
  it('starts at the largest power of two the memory model fits, capped by the data', () => {
    const predicted = (b: number) => 1000 + 10 * b;
    expect(seedBatch(predicted, 1000 + 10 * 700, 1 << 20)).toBe(512);
    expect(seedBatch(predicted, 1000 + 10 * 700, 300)).toBe(256);
    expect(seedBatch(predicted, 500, 1 << 20)).toBe(1); // not even batch 1 fits: still measure it
  });
});

describe('nextCandidate', () => {
  it('doubles from the seed to the first OOM, then bisects down to 1/16 of the batch', () => {
    const tried = search(256, 1 << 20, upTo(1600));
    expect(tried.slice(0, 4)).toEqual([256, 512, 1024, 2048]);
    expect(tried.slice(4)).toEqual([1536, 1792, 1664, 1600]);
    expect(pickBatches(tried.map(upTo(1600))).largestFitting).toBe(1600);
  });

  it('halves down from a seed the measurement refutes (the model under-predicted)', () => {
    const tried = search(1024, 1 << 20, upTo(300));
    expect(tried.slice(0, 3)).toEqual([1024, 512, 256]);
    const { largestFitting } = pickBatches(tried.map(upTo(300)));
    expect(largestFitting).toBeGreaterThanOrEqual(256);
    expect(largestFitting).toBeLessThanOrEqual(300);
    expect(largestFitting! + granularity(largestFitting!)).toBeGreaterThan(300);
  });

  it('ends with nothing when batch 1 does not fit', () => {
    expect(search(4, 1 << 20, upTo(0))).toEqual([4, 2, 1]);
  });

  it('stops at the data when every batch fits', () => {
    expect(search(64, 300, upTo(1e9))).toEqual([64, 128, 256, 300]);
  });

  it('treats a crash like an OOM above the last fit, and ignores one below it', () => {
    const crashAt = (bad: number) => (b: number): PlannedPoint => (b === bad ? { batchSize: b, fits: false, samplesPerSec: null } : upTo(1000)(b));
    const tried = search(128, 1 << 20, crashAt(512));
    expect(tried.slice(0, 3)).toEqual([128, 256, 512]);
    expect(Math.max(...tried)).toBe(512); // the crash bounds the search like a failure
    const points: PlannedPoint[] = [
      { batchSize: 64, fits: false, samplesPerSec: null },
      { batchSize: 128, fits: true, samplesPerSec: 10 },
    ];
    expect(nextCandidate(128, 1 << 20, points)).toBe(256);
  });
});

describe('nextCandidate with the ladder from the user\'s batch (engine search)', () => {
  it('measures the user batch and its doublings below the seed after the boundary is found (the H100 case)', () => {
    // 20,000 records on an 80 GB GPU: the model seeds 16,384 and everything fits up to the data.
    const tried = search(16_384, 20_000, upTo(1e9), 256);
    expect(tried).toEqual([16_384, 20_000, 256, 512, 1024, 2048, 4096, 8192]);
  });

  it('adds nothing without a ladder (the script target) or when the user batch is at or above the seed', () => {
    expect(search(16_384, 20_000, upTo(1e9))).toEqual([16_384, 20_000]);
    expect(search(256, 1 << 20, upTo(1600), 256)).toEqual(search(256, 1 << 20, upTo(1600)));
    expect(search(64, 300, upTo(1e9), 512)).toEqual([64, 128, 256, 300]);
  });

  it('stays below the largest fit when the seed is refuted, and takes a user batch that is not a power of two', () => {
    const tried = search(1024, 1 << 20, upTo(300), 100);
    expect(tried.slice(0, 3)).toEqual([1024, 512, 256]);
    expect(tried.filter((b) => b < 256)).toEqual([100, 200]);
    expect(search(4, 1 << 20, upTo(0), 1)).toEqual([4, 2, 1]); // nothing fits: no ladder
  });

  it('skips a ladder batch already tried, and a failure on the ladder does not reopen the boundary', () => {
    const crash200 = (b: number): PlannedPoint => (b === 200 ? { batchSize: b, fits: false, samplesPerSec: null } : upTo(300)(b));
    const tried = search(1024, 1 << 20, crash200, 100);
    expect(tried.filter((b) => b === 200)).toHaveLength(1);
    expect(new Set(tried).size).toBe(tried.length);
    expect(pickBatches(tried.map(crash200)).largestFitting).toBeGreaterThanOrEqual(256);
  });
});

describe('trialEpochs', () => {
  it('gives a trial enough epochs for its steps when an epoch is one step or less (the engine drops the last partial batch)', () => {
    expect(trialEpochs(5, 20_000, 20_000)).toBe(5);
    expect(trialEpochs(5, 20_000, 16_384)).toBe(5);
    expect(trialEpochs(5, 20_000, 8192)).toBe(3); // two steps an epoch
    expect(trialEpochs(5, 20_000, 256)).toBe(1);
    expect(trialEpochs(8, 60_000, 2)).toBe(1);
  });
});

describe('trialSamplesPerSec', () => {
  /** A step event of a trial whose epoch is one step (batch = records drawn). */
  const step = (globalStep: number, samplesPerSec: number): TrainStepEvent => ({
    type: 'step',
    epoch: globalStep,
    epochs: 5,
    step: 1,
    stepsPerEpoch: 1,
    globalStep,
    totalSteps: 5,
    loss: 1,
    accuracy: null,
    lr: 0.1,
    gradNorm: 1,
    samplesPerSec,
    phasesMs: { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0 },
  });

  it('leaves out the first window, where the cold first step allocates every buffer', () => {
    const events = [step(1, 3000), step(2, 40_000), step(3, 40_000), step(4, 40_000)];
    expect(trialSamplesPerSec(events, 20_000, 600).samplesPerSec).toBeCloseTo(40_000);
  });

  it("takes the engine's steady state (the first step left out) when every step fell in one window", () => {
    expect(trialSamplesPerSec([step(5, 3000)], 256, 8)).toEqual({ samplesPerSec: 32_000, unmeasured: null });
  });

  it('has no samples/s, and says why, when only the cold first step ran: never the cold rate', () => {
    const r = trialSamplesPerSec([step(1, 3244)], 16_384, null);
    expect(r.samplesPerSec).toBeNull();
    expect(r.unmeasured).toMatch(/trained 1 step\(s\), so no step after the cold first one .* was timed/);
  });
});

describe('pickBatches', () => {
  it('recommends the fastest fitting batch, not the largest, when the larger is clearly slower (non-monotone throughput)', () => {
    const sps: Record<number, number> = { 256: 900, 512: 1000, 1024: 800, 1536: 700 };
    const points: PlannedPoint[] = Object.entries(sps).map(([b, s]) => ({ batchSize: Number(b), fits: true, samplesPerSec: s }));
    points.push({ batchSize: 2048, fits: false, samplesPerSec: null });
    expect(pickBatches(points)).toEqual({ largestFitting: 1536, recommended: 512 });
  });

  it('prefers the smaller batch when two are within the noise: the least change to the recipe', () => {
    const points = [
      { batchSize: 512, fits: true, samplesPerSec: 970 },
      { batchSize: 1024, fits: true, samplesPerSec: 1000 },
    ];
    expect(pickBatches(points).recommended).toBe(512);
  });

  it('recommends the smallest batch within the noise of the best, not of its neighbour (the H100 case)', () => {
    const sps: Record<number, number> = { 256: 30_000, 512: 34_000, 1024: 36_100, 2048: 37_000, 4096: 37_500, 16_384: 37_000, 20_000: 37_818 };
    const points: PlannedPoint[] = Object.entries(sps).map(([b, s]) => ({ batchSize: Number(b), fits: true, samplesPerSec: s }));
    expect(pickBatches(points)).toEqual({ largestFitting: 20_000, recommended: 1024 });
    // Just outside the noise of the best is not a tie.
    points.find((p) => p.batchSize === 1024)!.samplesPerSec = 35_900;
    expect(pickBatches(points).recommended).toBe(2048);
  });

  it('never recommends a trial without samples/s as the fastest, though it counts as fitting', () => {
    const points = [
      { batchSize: 512, fits: true, samplesPerSec: 1000 },
      { batchSize: 20_000, fits: true, samplesPerSec: null },
    ];
    expect(pickBatches(points)).toEqual({ largestFitting: 20_000, recommended: 512 });
  });

  it('never recommends a batch that ran but broke the headroom', () => {
    const points = [
      { batchSize: 512, fits: true, samplesPerSec: 1000 },
      { batchSize: 1024, fits: false, samplesPerSec: 2000 },
    ];
    expect(pickBatches(points)).toEqual({ largestFitting: 512, recommended: 512 });
  });
});

describe('microBatchFor', () => {
  it('splits a global batch into the largest fitting divisor and its accumulation', () => {
    expect(microBatchFor(4096, 1600)).toEqual({ microBatch: 1024, accumulation: 4 });
    expect(microBatchFor(1000, 300)).toEqual({ microBatch: 250, accumulation: 4 });
    expect(microBatchFor(512, 4096)).toEqual({ microBatch: 512, accumulation: 1 });
    expect(microBatchFor(97, 50)).toEqual({ microBatch: 1, accumulation: 97 });
  });
});

describe('verdictLine', () => {
  const trial = (batchSize: number, samplesPerSec: number | null, fits = samplesPerSec !== null): BatchTrial => ({
    index: 0,
    batchSize,
    accumulation: 1,
    outcome: samplesPerSec === null ? 'E_OOM' : 'ok',
    samplesPerSec,
    peakBytes: samplesPerSec === null ? null : batchSize * 2 ** 20,
    fits,
    seconds: 1,
    message: null,
    target: {
      kind: 'engine',
      predicted: { weights: 0, gradients: 0, optimizerState: 0, activations: 0, activationGrads: 0, batchData: 0, workspace: 0, total: batchSize * 2 ** 20 },
      memoryBeforeBytes: 0,
      memoryAfterBytes: 0,
      backAtBaseline: true,
      processPeakRssBytes: null,
    },
  });
  const base = { headroom: 0.1, capacityBytes: 2 ** 31, globalBatch: null };

  it('says what fits, what the next smaller batch costs, and how to scale the LR', () => {
    const trials = [trial(1024, 970), trial(2048, null), trial(1536, 1000)];
    expect(verdictLine({ ...base, trials, largestFitting: 1536, recommended: 1536, baseBatch: 256 })).toBe(
      'batch 1,536 fits with 10% headroom; 1,024 is 3% slower per sample; use 1,536 and scale the LR by 6x (linear scaling from batch 256; warm it up)',
    );
  });

  it('names the largest batch as the slower one when a smaller batch is recommended', () => {
    const trials = [trial(512, 1000), trial(1024, 800)];
    expect(verdictLine({ ...base, trials, largestFitting: 1024, recommended: 512, baseBatch: 512 })).toBe(
      'batch 1,024 fits with 10% headroom but is 20% slower per sample than 512; use 512 and keep the LR',
    );
  });

  it('says the largest batch is within the noise of the smaller one it recommends, and how much faster it was', () => {
    const trials = [trial(20_000, 37_818), trial(16_384, 37_000), trial(256, 36_100), trial(2048, 36_500)];
    expect(verdictLine({ ...base, trials, largestFitting: 20_000, recommended: 256, baseBatch: 256 })).toBe(
      'batch 20,000 fits with 10% headroom but is within the 5% noise of 256 (5% faster per sample), the smaller change to the recipe; use 256 and keep the LR',
    );
  });

  it('names the fastest batch when it is neither the largest nor the recommended one', () => {
    const trials = [trial(20_000, 930), trial(4096, 1000), trial(2048, 980)];
    expect(verdictLine({ ...base, trials, largestFitting: 20_000, recommended: 2048, baseBatch: 256 })).toBe(
      'batch 20,000 fits with 10% headroom but is 5% slower per sample than 2,048; the fastest that fits, 4,096, is 2% faster per sample, within the 5% noise; use 2,048 and scale the LR by 8x (linear scaling from batch 256; warm it up)',
    );
  });

  it('says plainly when nothing fits', () => {
    expect(verdictLine({ ...base, trials: [trial(1, null)], largestFitting: null, recommended: null, baseBatch: 64 })).toBe(
      'no batch fits in 2048 MiB with 10% headroom; batch 1 needs 1 MiB by the memory model: use a smaller model, less headroom or more memory',
    );
  });
});

describe('the search loop, cancelled', () => {
  const fitsUpTo256 = upTo(256);

  it('keeps the trials finished before a cancel, with the answer from them and the cancel that stopped it', async () => {
    let cancelled = false;
    const tried: number[] = [];
    const outcome = await searchBatches(
      {
        trial: (b) => {
          tried.push(b);
          if (tried.length === 2) cancelled = true; // the cancel lands during the second trial, which still finishes
          return Promise.resolve(fitsUpTo256(b));
        },
        cancelled: () => cancelled,
      },
      64,
      4096,
    );
    expect(tried).toEqual([64, 128]);
    expect(outcome).toMatchObject({ largestFitting: 128, recommended: 128 });
    expect(outcome.trials.map((t) => t.batchSize)).toEqual([64, 128]);
    expect(outcome.stopped?.code).toBe('E_CANCELLED');
    expect(outcome.stopped?.message).toBe('the batch-size search was cancelled after 2 trial(s), before batch 256');
  });

  it('keeps them too when the cancel stops the trial in flight, and lets any other failure end the search', async () => {
    let cancelled = false;
    const stoppedInTrial = await searchBatches(
      {
        trial: (b) => {
          if (b === 128) {
            cancelled = true;
            return Promise.reject(new ApiError('E_CANCELLED', 'the trial at batch 128 was stopped'));
          }
          return Promise.resolve(fitsUpTo256(b));
        },
        cancelled: () => cancelled,
      },
      64,
      4096,
    );
    expect(stoppedInTrial.trials.map((t) => t.batchSize)).toEqual([64]);
    expect(stoppedInTrial.stopped?.message).toBe('the trial at batch 128 was stopped');
    // A trial's E_CANCELLED without a cancel of the search (not ours to keep), and any other error, still throw.
    await expect(searchBatches({ trial: () => Promise.reject(new ApiError('E_CANCELLED', 'not asked')), cancelled: () => false }, 64, 4096)).rejects.toThrow('not asked');
    await expect(searchBatches({ trial: () => Promise.reject(new Error('engine gone')), cancelled: () => false }, 64, 4096)).rejects.toThrow('engine gone');
  });

  it('ends with stopped null when it runs out of batches to try', async () => {
    const whole = await searchBatches({ trial: (b) => Promise.resolve(fitsUpTo256(b)), cancelled: () => false }, 64, 4096);
    expect(whole.stopped).toBeNull();
    expect(whole.largestFitting).toBe(256);
  });
});
