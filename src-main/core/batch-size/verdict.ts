import type { BatchTrial } from '../../api/batch-size';

const n = (x: number) => Math.round(x).toLocaleString('en-US');
const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;

export interface VerdictInput {
  trials: BatchTrial[];
  largestFitting: number | null;
  recommended: number | null;
  headroom: number;
  capacityBytes: number;
  /** The batch the LR was tuned for (the request's batchSize): the LR scales from it. */
  baseBatch: number;
  globalBatch: { global: number; microBatch: number; accumulation: number } | null;
}

function samplesPerSec(trials: BatchTrial[], batch: number): number | null {
  return trials.find((t) => t.batchSize === batch && t.accumulation === 1 && t.outcome === 'ok')?.samplesPerSec ?? null;
}

/** One plain line: what fits, what is fastest, what to use and how to scale the learning rate. */
export function verdictLine(v: VerdictInput): string {
  const pct = Math.round(v.headroom * 100);
  if (v.largestFitting === null || v.recommended === null) {
    const smallest = [...v.trials].sort((a, b) => a.batchSize - b.batchSize)[0];
    const need = smallest ? `; batch ${n(smallest.batchSize)} needs ${mib(smallest.predicted.total)} by the memory model` : '';
    return `no batch fits in ${mib(v.capacityBytes)} with ${pct}% headroom${need}: use a smaller model, less headroom or more memory`;
  }
  const parts = [`batch ${n(v.largestFitting)} fits with ${pct}% headroom`];
  const best = samplesPerSec(v.trials, v.recommended);
  // What the choice is worth: the largest batch against the recommended one, or the next smaller fitting batch.
  const smaller = v.trials
    .filter((t) => t.fits && t.accumulation === 1 && t.batchSize < v.recommended! && t.samplesPerSec !== null)
    .sort((a, b) => b.batchSize - a.batchSize)[0];
  const other = v.recommended < v.largestFitting ? v.trials.find((t) => t.batchSize === v.largestFitting && t.accumulation === 1) : smaller;
  if (best !== null && other?.samplesPerSec) {
    const diff = (1 - other.samplesPerSec / best) * 100;
    const size = Math.abs(diff) < 1 ? 'less than 1%' : `${Math.abs(diff).toFixed(0)}%`;
    const than = `${size} ${diff >= 0 ? 'slower' : 'faster'} per sample`;
    // When the largest batch is not the one to use, say so in the same clause, so the line reads as one reason.
    if (other.batchSize === v.largestFitting) parts[0] += ` but is ${than} than ${n(v.recommended)}`;
    else parts.push(`${n(other.batchSize)} is ${than}`);
  }
  const scale = v.recommended / v.baseBatch;
  const lr = scale === 1 ? 'keep the LR' : `scale the LR by ${scale >= 10 ? scale.toFixed(0) : scale.toFixed(2).replace(/\.?0+$/, '')}x (linear scaling from batch ${n(v.baseBatch)}; warm it up)`;
  parts.push(`use ${n(v.recommended)} and ${lr}`);
  if (v.globalBatch) {
    const g = v.globalBatch;
    parts.push(`for a global batch of ${n(g.global)}: micro-batch ${n(g.microBatch)} x ${g.accumulation} accumulation steps`);
  }
  return parts.join('; ');
}
