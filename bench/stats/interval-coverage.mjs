#!/usr/bin/env node
// How often the intervals Trainbench prints hold the true value, simulated (ADR 0045): a median over n
// repetitions, and the ratio of two sets' medians over n + n, each by the percentile bootstrap they used
// before (4,000 resamples, as the old code drew them) and by the intervals that replaced it (order
// statistics; Mann-Whitney), with the level each names. Throughputs are lognormal, 5% spread, the candidate
// a fixed 1.2x: the shift model the Mann-Whitney interval assumes; the order-statistic one assumes nothing.
//   npm run build:ts && node bench/stats/interval-coverage.mjs [-- --draws 2000] [-- --out FILE | --save]
import { createRequire } from 'node:module';
import path from 'node:path';

import { benchOutput, numberArg, REPO_ROOT as root } from '../../scripts/bench-output.mjs';

const require = createRequire(import.meta.url);
const { medianInterval, quantile, seededRandom } = require(path.join(root, 'dist/src-main/core/stats/medians.js'));
const { ratioInterval } = require(path.join(root, 'dist/src-main/core/stats/ratio-interval.js'));

const args = process.argv.slice(2);
const output = benchOutput(args);
const draws = numberArg(args, '--draws', 2000);
const RESAMPLES = 4000;
const SIZES = [2, 3, 4, 5, 6, 7, 9, 12];

const random = seededRandom(2026);
const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
const sample = (n, centre) => Array.from({ length: n }, () => centre * Math.exp(0.05 * normal()));
const median = (xs) => quantile([...xs].sort((a, b) => a - b), 0.5);
const resampled = (xs) => median(Array.from(xs, () => xs[Math.floor(random() * xs.length)]));

/** The percentile bootstrap's 95% interval of a statistic, as the old medianInterval and ratioInterval drew it. */
function bootstrap(statistic) {
  const values = Array.from({ length: RESAMPLES }, statistic).sort((a, b) => a - b);
  return { low: quantile(values, 0.025), high: quantile(values, 0.975) };
}

const holds = (i, truth) => i.low <= truth && truth <= i.high;
const rows = [];
for (const n of SIZES) {
  let medianBoot = 0;
  let medianOrder = 0;
  let ratioBoot = 0;
  let ratioMw = 0;
  let medianLevel = 1;
  let ratioLevel = 1;
  for (let d = 0; d < draws; d++) {
    // The true median of a lognormal at 1000 is 1000; the true ratio of the two is 1.2.
    const base = sample(n, 1000);
    const cand = sample(n, 1200);
    if (holds(bootstrap(() => resampled(base)), 1000)) medianBoot++;
    const order = medianInterval(base);
    medianLevel = order.coverage ?? 0.95;
    if (holds(order, 1000)) medianOrder++;
    if (holds(bootstrap(() => resampled(cand) / resampled(base)), 1.2)) ratioBoot++;
    const mw = ratioInterval(base, cand);
    ratioLevel = mw.coverage ?? 0.95;
    if (holds(mw, 1.2)) ratioMw++;
  }
  rows.push({ n, medianBootstrap: medianBoot / draws, medianOrder: medianOrder / draws, medianLevel, ratioBootstrap: ratioBoot / draws, ratioMannWhitney: ratioMw / draws, ratioLevel });
}

const pct = (x) => `${(100 * x).toFixed(1)}%`.padStart(7);
console.log(`coverage over ${draws} simulated sets each (lognormal, 5% spread); "named" is the level the interval now prints (95% where it reaches it)\n`);
console.log('   n | median: bootstrap  order stat.  named | ratio n+n: bootstrap  Mann-Whitney  named');
for (const r of rows) {
  console.log(`${String(r.n).padStart(4)} |          ${pct(r.medianBootstrap)}      ${pct(r.medianOrder)} ${pct(r.medianLevel)} |              ${pct(r.ratioBootstrap)}       ${pct(r.ratioMannWhitney)} ${pct(r.ratioLevel)}`);
}
output.write('interval-coverage', { bench: 'interval-coverage', draws, resamples: RESAMPLES, spread: 0.05, trueRatio: 1.2, rows });
