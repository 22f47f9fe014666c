import type { BatchTrial } from '../../../api/batch-size';
import { THROUGHPUT_NOISE } from '../../../api/batch-size';

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

/** One plain line: what fits, what is fastest, what to use (the smallest batch within the noise of the fastest) and how to scale the LR. */
export function verdictLine(v: VerdictInput): string {
  const pct = Math.round(v.headroom * 100);
  if (v.largestFitting === null || v.recommended === null) {
    const smallest = [...v.trials].sort((a, b) => a.batchSize - b.batchSize)[0];
    const need = smallest?.target.kind === 'engine' ? `; batch ${n(smallest.batchSize)} needs ${mib(smallest.target.predicted.total)} by the memory model` : '';
    return `no batch fits in ${mib(v.capacityBytes)} with ${pct}% headroom${need}: use a smaller model, less headroom or more memory`;
  }
  const parts = [`batch ${n(v.largestFitting)} fits with ${pct}% headroom`];
  const best = samplesPerSec(v.trials, v.recommended);
  const noise = `the ${Math.round(THROUGHPUT_NOISE * 100)}% noise`;
  /** How much faster (+) or slower (-) per sample `other` is than the recommended batch, in words. */
  const against = (other: number) => {
    const diff = (other / best! - 1) * 100;
    const size = Math.abs(diff) < 1 ? 'less than 1%' : `${Math.abs(diff).toFixed(0)}%`;
    return `${size} ${diff >= 0 ? 'faster' : 'slower'} per sample`;
  };
  if (best === null) {
    parts.push('no trial measured samples/s to compare');
  } else if (v.recommended < v.largestFitting) {
    // The largest batch is not the one to use: say why in the same clause, so the line reads as one reason.
    const largest = samplesPerSec(v.trials, v.largestFitting);
    const fastestRate = Math.max(...v.trials.filter((t) => t.fits && t.accumulation === 1).map((t) => t.samplesPerSec ?? 0));
    if (largest === null) parts[0] += ' but measured no samples/s';
    else if (largest >= fastestRate * (1 - THROUGHPUT_NOISE)) {
      parts[0] += ` but is within ${noise} of ${n(v.recommended)} (${against(largest)}), the smaller change to the recipe`;
    } else parts[0] += ` but is ${against(largest)} than ${n(v.recommended)}`;
    // The fastest, when it is neither of the two, is named too: the recommendation gives up its few percent on purpose.
    const fastest = v.trials
      .filter((t) => t.fits && t.accumulation === 1 && t.samplesPerSec !== null && t.samplesPerSec > best)
      .sort((a, b) => (b.samplesPerSec as number) - (a.samplesPerSec as number))[0];
    if (fastest && fastest.batchSize !== v.largestFitting) parts.push(`the fastest that fits, ${n(fastest.batchSize)}, is ${against(fastest.samplesPerSec!)}, within ${noise}`);
  } else {
    // The largest is the one to use: what the next smaller fitting batch would cost.
    const smaller = v.trials
      .filter((t) => t.fits && t.accumulation === 1 && t.batchSize < v.recommended! && t.samplesPerSec !== null)
      .sort((a, b) => b.batchSize - a.batchSize)[0];
    if (smaller) parts.push(`${n(smaller.batchSize)} is ${against(smaller.samplesPerSec!)}`);
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
