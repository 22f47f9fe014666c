/**
 * The order-statistic interval of a median (the sign test's), as pure arithmetic both the wizard
 * (core/optimise/trial-decision.ts) and every view of its speedups use: with few pairs it covers less
 * than 95% (93.75% for 5, 50% for 2), and whoever shows the interval says so.
 */

/** P(X <= j) for X ~ Binomial(n, 1/2). */
function binomialHalfCdf(n: number, j: number): number {
  let term = 0.5 ** n;
  let sum = term;
  for (let i = 1; i <= j; i++) {
    term = (term * (n - i + 1)) / i;
    sum += term;
  }
  return sum;
}

/** The j of the interval [x(j), x(n+1-j)] over n values: the largest whose coverage reaches `confidence`, else 1. */
export function orderIndex(n: number, confidence = 0.95): number {
  let j = 1;
  while (j + 1 <= Math.floor((n + 1) / 2) && 1 - 2 * binomialHalfCdf(n, j) >= confidence) j++;
  return j;
}

/** The true coverage of that interval over n values (of a paired speedup over n pairs): 0.9375 for 5, at least 0.95 from 6. */
export function orderIntervalCoverage(n: number, confidence = 0.95): number {
  return n > 0 ? 1 - 2 * binomialHalfCdf(n, orderIndex(n, confidence) - 1) : 0;
}

/** "95%", or the true level when it is less: "93.8%". */
export function ciLevel(coverage: number): string {
  return coverage >= 0.95 ? '95%' : `${(100 * coverage).toFixed(1)}%`;
}

/** The level of an interval that carries its coverage only where it is below 95% (a median over few repetitions). */
export function intervalLevel(i: { coverage?: number } | null | undefined): string {
  return ciLevel(i?.coverage ?? 1);
}

/** The levels of several intervals, for a title over all of them: "95%", or "75.0% or 95%" where they differ. */
export function intervalLevels(intervals: readonly ({ coverage?: number } | null | undefined)[]): string {
  const levels = [...new Set(intervals.map(intervalLevel))];
  return levels.length ? levels.join(' or ') : '95%';
}

/**
 * Below this coverage a paired interval only leans (issue 38): no change is kept or rejected on it, and the
 * label says "leaning faster, 75%". Five pairs are the fewest that reach it (93.75%); four cover 87.5%.
 */
export const DECIDING_COVERAGE = 0.9;

/** The fewest pairs whose interval reaches DECIDING_COVERAGE. */
export function pairsToDecide(): number {
  let n = 1;
  while (orderIntervalCoverage(n) < DECIDING_COVERAGE) n++;
  return n;
}

/** What `pairs` A/B pairs per trial allow, in words, said before a wizard starts (the form, the CLI). */
export function pairsAllow(pairs: number): string {
  const level = ciLevel(orderIntervalCoverage(pairs));
  const n = pairsToDecide();
  // One pair has no interval at all (its coverage is 0): nothing to lean on either.
  if (pairs < 2) return `1 pair a trial gives no interval: trials can neither keep, reject nor lean; ${n} or more decide`;
  return orderIntervalCoverage(pairs) >= DECIDING_COVERAGE
    ? `${pairs} pairs a trial: each speedup's interval covers ${level}, enough to keep or reject a change`
    : `${pairs} pair${pairs === 1 ? '' : 's'} a trial: each speedup's interval covers only ${level}, so trials can lean faster or slower but keep or reject nothing; ${n} or more decide`;
}
