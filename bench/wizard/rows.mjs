// From what bench:wizard measured to the rows of its table and JSON. The statistics are the product's
// (dist/src-main/core/stats/medians.js and ratio-interval.js, ADR 0045): a row's samples/s is the median of
// its launches with its order-statistic interval, and each ratio is median over median, with the
// Mann-Whitney interval of that ratio, so a row's speedup is its samples/s over the plain script's, exactly.
import { createRequire } from 'node:module';
import path from 'node:path';

import { REPO_ROOT } from '../../scripts/bench-output.mjs';

const require = createRequire(import.meta.url);
const stats = (file) => require(path.join(REPO_ROOT, 'dist', 'src-main', 'core', 'stats', file));
const { medianInterval } = stats('medians.js');
const { ratioInterval } = stats('ratio-interval.js');

/**
 * The rows of one workload. `measured` has one entry per variant, in table order: its id, label,
 * overrides, samples/s per launch (or `sameAs`: another variant's id whose configuration it is,
 * measured once), and for a wizard row what the wizard decided.
 */
export function workloadRows(measured) {
  const byId = new Map(measured.map((m) => [m.id, m]));
  const samplesOf = (m) => (m.sameAs ? byId.get(m.sameAs).samples : m.samples);
  const plain = samplesOf(byId.get('plain'));
  const expert = samplesOf(byId.get('expert'));
  return measured.map((m) => {
    const samples = samplesOf(m);
    return {
      ...m,
      samples,
      samplesPerSec: medianInterval(samples),
      speedupOverPlain: ratioInterval(plain, samples),
      shareOfExpert: ratioInterval(expert, samples),
    };
  });
}

/** The rows' cells for the printed table: samples/s with its interval, the two ratios. */
export function tableLines(workload, rows) {
  const n = (x) => Math.round(x).toLocaleString('en-US');
  const x = (i) => `${i.median.toFixed(2)}x [${i.low.toFixed(2)}, ${i.high.toFixed(2)}]`;
  const pct = (i) => `${(100 * i.median).toFixed(0)}%`;
  return rows.map((r) => {
    const wall = r.wizard ? `${(r.wizard.wallSeconds / 60).toFixed(1)} min` : '';
    const kept = r.wizard ? r.wizard.kept.map((k) => k.change).join(', ') || 'nothing' : r.id === 'expert' ? 'all of its settings' : '';
    const same = r.sameAs ? ` (= ${r.sameAs})` : '';
    return `| ${workload} | ${r.label}${same} | ${n(r.samplesPerSec.median)} [${n(r.samplesPerSec.low)}, ${n(r.samplesPerSec.high)}] | ${x(r.speedupOverPlain)} | ${pct(r.shareOfExpert)} | ${wall} | ${kept} |`;
  });
}

/** What a script wizard's --json result says it kept, rejected (slower, crashed, or changing the loss), left undecided and skipped, each with why, and its loss guard. */
export function wizardSummary(result, wallSeconds) {
  const trials = result.trials.map((t) => ({ change: t.change.label, decision: t.decision, kept: t.kept, speedup: t.speedup, lossDelta: t.lossDelta, why: t.why, seconds: t.seconds, error: t.error }));
  const kept = trials.filter((t) => t.kept);
  const rejected = trials.filter((t) => !t.kept && REJECTED.includes(t.decision));
  const unchecked = kept.filter((t) => t.lossDelta === null);
  const verdict =
    kept.length === 0 ? 'nothing kept, nothing to check' : unchecked.length ? `kept without a loss check: ${unchecked.map((t) => t.change).join(', ')}` : 'passed for every kept change';
  const brief = ({ change, decision, why }) => ({ change, decision, why });
  return {
    preset: result.preset,
    status: result.status,
    wallSeconds,
    reportedSeconds: result.seconds,
    baseline: result.baseline.samplesPerSec,
    noiseFloor: result.baseline.noiseFloor,
    diagnosis: result.diagnosis,
    overrides: result.target.final?.overrides ?? {},
    kept: kept.map(({ change, speedup, why }) => ({ change, speedup, why })),
    rejected: rejected.map(brief),
    undecided: trials.filter((t) => !t.kept && !REJECTED.includes(t.decision)).map(brief),
    notTried: result.skipped.map((s) => ({ change: s.change.label, why: s.why })),
    trials,
    lossCheck: { verdict, rejectedForLoss: trials.filter((t) => t.decision === 'changes-results').map((t) => t.change), ...(result.target.lossCheck ?? {}) },
    finalVerdict: result.final.verdict,
  };
}

/** The trial decisions that drop a change. */
const REJECTED = ['reject', 'changes-results', 'crashed'];
