import { studentTQuantile } from './student-t';

/**
 * How often a change that only moves the training onto other random streams may be dropped as "changes results":
 * the across-streams test is Student's two-sided t-test at this level (docs/adr/0042).
 */
export const STREAMS_FALSE_REJECTION = 0.01;

/**
 * The loss of a change of the random streams, judged against how far a change of the streams moves it: pair i of the
 * trial ran both sides on stream i, so each stream gives one difference d_i = candidate's mean loss - best's. Under
 * "the change only moves the streams" the d_i scatter around 0 (on one stream the candidate draws other crops, on
 * the next other ones again); a change of the training moves their mean away from 0. Paired t-test: the mean of the
 * d_i stays within k x s / sqrt(n) in 1 - STREAMS_FALSE_REJECTION of trials, s their standard deviation across the
 * n streams and k Student's quantile with n - 1 degrees of freedom. Paired, because both sides of a pair share the
 * stream's initialisation and order: their losses move together (correlation 0.74 on resnet_cifar), so a two-sample
 * test of the sides' spreads would count that shared part as noise of the difference.
 */
export interface AcrossStreams {
  /** Streams per side (the trial's pairs). */
  streams: number;
  /** |mean(candidate) - mean(best)| / |mean(best)|: the mean of the d_i, relative. */
  delta: number;
  /** The standard deviation of the d_i across the streams, relative to the best's mean loss: how far a stream moves the difference. */
  spread: number;
  /** Student's t quantile the bound is k standard errors of: 1 - STREAMS_FALSE_REJECTION / 2, n - 1 degrees of freedom. */
  k: number;
  /** k x spread / sqrt(n): how far the mean may move from a change of the streams alone. */
  bound: number;
}

const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/** The across-streams comparison of the two sides' mean losses (one per stream, finite); null with fewer than 2 streams a side. */
export function acrossStreams(best: readonly number[], candidate: readonly number[]): AcrossStreams | null {
  const n = Math.min(best.length, candidate.length);
  if (n < 2 || best.length !== candidate.length || ![...best, ...candidate].every(Number.isFinite)) return null;
  const d = candidate.map((c, i) => c - best[i]);
  const md = mean(d);
  const sd = Math.sqrt(d.reduce((s, x) => s + (x - md) ** 2, 0) / (n - 1));
  const scale = Math.max(Math.abs(mean(best)), 1e-12);
  const k = studentTQuantile(1 - STREAMS_FALSE_REJECTION / 2, n - 1);
  const spread = sd / scale;
  return { streams: n, delta: Math.abs(md) / scale, spread, k, bound: (k * spread) / Math.sqrt(n) };
}

const pct = (x: number) => `${(100 * x).toFixed(3)}%`;

/** The tolerance the across-streams test applies: the configured one, or the streams' own bound where that is wider. */
export function streamsTolerance(s: AcrossStreams, configured: number): number {
  return Math.max(configured, s.bound);
}

/** The test and its numbers, in words, for a trial's why (and so the report). */
export function acrossStreamsText(s: AcrossStreams, configured: number): string {
  const tolerance = streamsTolerance(s, configured);
  const which = tolerance === configured ? `the configured ${pct(configured)}, wider than the streams' ${pct(s.bound)}` : `the streams' ${pct(s.bound)}, wider than the configured ${pct(configured)}`;
  return (
    `the mean loss over ${s.streams} random streams (pair i on stream i, both sides alike) moved by ${pct(s.delta)}; ` +
    `stream by stream it moved with a spread of ${pct(s.spread)} (standard deviation), so a change of the streams alone moves the mean by up to ` +
    `${s.k.toFixed(2)} x ${pct(s.spread)} / sqrt(${s.streams}) = ${pct(s.bound)} (paired t-test, ${s.streams - 1} degree${s.streams === 2 ? "" : "s"} of freedom, ` +
    `${(100 * (1 - STREAMS_FALSE_REJECTION)).toFixed(0)}%); tolerance ${pct(tolerance)} (${which})`
  );
}
