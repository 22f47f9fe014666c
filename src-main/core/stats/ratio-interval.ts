/**
 * The speedup of one set of independent repetitions over another, with a distribution-free interval: the
 * Mann-Whitney (Hodges-Lehmann) interval of the shift between the two sets' log throughputs, whose coverage is
 * exact under the shift model (a change multiplies throughput by a factor) at every number of repetitions. The
 * estimate is the ratio of the medians, the figure shown beside each side's own median.
 */
import type { Interval } from './medians';
import { median } from './medians';

/** Beyond this many pairs (n x m) the null distribution of U is taken as normal: exact counts would cost more than they add. */
const EXACT_PAIRS = 10_000;

/**
 * P(U <= u) for u = 0 .. n*m, U the Mann-Whitney statistic of samples of n and m under the null: the coefficients
 * of the Gaussian binomial [n+m choose n], by the recurrence C(N, k) = C(N-1, k-1) + q^k C(N-1, k), normalised.
 */
function mannWhitneyCdf(n: number, m: number): number[] {
  const k = Math.min(n, m);
  // row[j]: the polynomial [N choose j] as coefficients, for N = 0 .. n+m.
  let row: number[][] = [[1]];
  for (let N = 1; N <= n + m; N++) {
    const next: number[][] = [];
    for (let j = 0; j <= Math.min(N, k); j++) {
      const a = j > 0 ? row[j - 1] : undefined;
      const b = j < N ? row[j] : undefined;
      const out = new Array<number>(j * (N - j) + 1).fill(0);
      if (a) for (let i = 0; i < a.length; i++) out[i] += a[i];
      if (b) for (let i = 0; i < b.length; i++) out[i + j] += b[i];
      next.push(out);
    }
    row = next;
  }
  const counts = row[k];
  const total = counts.reduce((s, c) => s + c, 0);
  let acc = 0;
  return counts.map((c) => (acc += c) / total);
}

/** P(U <= u) under the normal approximation (with continuity correction), for sets too large to count exactly. */
function normalCdf(n: number, m: number): (u: number) => number {
  const mean = (n * m) / 2;
  const sd = Math.sqrt((n * m * (n + m + 1)) / 12);
  return (u) => 0.5 * (1 + erf((u + 0.5 - mean) / (sd * Math.SQRT2)));
}

/** Abramowitz and Stegun 7.1.26: |error| < 1.5e-7, plenty for a coverage. */
function erf(x: number): number {
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return x >= 0 ? y : -y;
}

function checkPositive(xs: readonly number[], what: string): void {
  if (xs.length === 0) throw new RangeError(`${what}: no measurements`);
  for (const x of xs) if (!(Number.isFinite(x) && x > 0)) throw new RangeError(`${what}: measurement ${x} is not a positive finite number`);
}

/**
 * median(candidate) / median(baseline), with the interval [D(k), D(nm+1-k)] of the n x m ratios candidate_i /
 * baseline_j sorted, k the largest whose coverage 1 - 2 P(U < k) reaches `confidence`. Where none does (3 + 3
 * repetitions reach 90% at most), the widest, [min, max] of the ratios, is given with its true coverage.
 */
export function ratioInterval(baseline: readonly number[], candidate: readonly number[], confidence = 0.95): Interval {
  checkPositive(baseline, 'ratioInterval baseline');
  checkPositive(candidate, 'ratioInterval candidate');
  const n = candidate.length;
  const m = baseline.length;
  const ratios = candidate.flatMap((c) => baseline.map((b) => c / b)).sort((x, y) => x - y);
  const exact = n * m <= EXACT_PAIRS ? mannWhitneyCdf(n, m) : null;
  const cdf = exact ? (u: number) => exact[Math.min(u, exact.length - 1)] : normalCdf(n, m);
  let k = 1;
  while (k + 1 <= Math.floor((ratios.length + 1) / 2) && 1 - 2 * cdf(k) >= confidence) k++;
  const coverage = Math.max(0, 1 - 2 * cdf(k - 1));
  const interval = { low: ratios[k - 1], median: median(candidate) / median(baseline), high: ratios[ratios.length - k] };
  return coverage < confidence ? { ...interval, coverage } : interval;
}
