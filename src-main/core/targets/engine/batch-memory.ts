/**
 * The engine's side of the batch-size search as arithmetic: where it starts (the largest power of two the
 * memory model says fits), how many epochs a trial of a few steps needs, and the micro-batch and accumulation
 * that make up a global batch. Pure, so each is unit-tested with made-up numbers.
 */

/** The largest power of two whose predicted footprint fits `usableBytes` (at least 1), capped at maxBatch. */
export function seedBatch(predictedTotal: (batch: number) => number, usableBytes: number, maxBatch: number): number {
  let seed = 1;
  while (seed * 2 <= maxBatch && predictedTotal(seed * 2) <= usableBytes) seed *= 2;
  return seed;
}

/** Epochs a trial needs for `steps` optimizer steps: the engine drops the last partial batch, so an epoch is floor(drawn / perStep) steps. */
export function trialEpochs(steps: number, drawn: number, perStep: number): number {
  const perEpoch = Math.max(1, Math.floor(drawn / perStep));
  return Math.min(100_000, Math.ceil(steps / perEpoch));
}

/** The micro-batch (a divisor of globalBatch no larger than largestFitting) and accumulation that make up globalBatch. */
export function microBatchFor(globalBatch: number, largestFitting: number): { microBatch: number; accumulation: number } {
  for (let m = Math.min(globalBatch, largestFitting); m >= 1; m--) {
    if (globalBatch % m === 0) return { microBatch: m, accumulation: globalBatch / m };
  }
  return { microBatch: 1, accumulation: globalBatch };
}
