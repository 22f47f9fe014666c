import { conditionsSummary } from '../api/confounders';
import { compileText, lossCheckText, trialCiLevel, trialDecisionWords } from '../api/charts/optimise-charts';
import type { OptimiseProgress, OptimiseTrial } from '../api/optimise';
import type { EngineOptimiseResult, ScriptOptimiseResult } from '../api/optimise-result';
import { pairsAllow } from '../api/order-interval';
import { finalFigures } from '../api/paired-figures';
import type { WizardResult } from '../api/optimise';
import { overrideCode } from '../api/script-override-code';
import { printable } from '../api/shell-word';
import { scriptBoundText } from '../core/knobs/diagnosis';

// What `optimise` prints: its progress, and the result of the engine's wizard or of a script's (a command after '--').

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const x3 = (v: number) => `${v.toFixed(3)}x`;

function duration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds) || seconds < 0) return '--:--';
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** One progress line: a bar over the phase's repetitions, and the ETA of the whole wizard. */
export function progressLine(p: OptimiseProgress): string {
  const frac = p.repetitions > 0 ? p.repetition / p.repetitions : 0;
  const width = 20;
  const filled = Math.round(frac * width);
  const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
  const eta = `elapsed ${duration(p.elapsedSeconds)}, ETA ${duration(p.etaSeconds)}`;
  if (p.finishedTrial) return `trial ${p.finishedTrial.index}: ${p.finishedTrial.change.label}: ${trialDecisionWords(p.finishedTrial)} (${trialSpeedup(p.finishedTrial)}); state saved (${eta})`;
  switch (p.phase) {
    case 'preparing':
      return `optimisation ${p.jobId}: preparing the data`;
    case 'baseline':
      return `baseline ${bar} repetition ${p.repetition}/${p.repetitions} (${eta})`;
    case 'limits':
      return 'measuring the physical limits (GEMM rate, read rate)';
    case 'batch-search':
      return 'searching the batch size for the batch-size candidate (a run of kind batch-search)';
    case 'trial':
      return `trial ${p.trial}/${p.maxTrials} max: ${p.label} ${bar} pair ${p.repetition}/${p.repetitions} (${eta})`;
    case 'final':
      return `final vs baseline ${bar} pair ${p.repetition}/${p.repetitions} (${eta})`;
    case 'done':
      return `done in ${duration(p.elapsedSeconds)}`;
  }
}

function trialSpeedup(t: OptimiseTrial): string {
  return t.speedup ? `${x3(t.speedup.median)} [${x3(t.speedup.low)}, ${x3(t.speedup.high)}]` : 'no speedup measured';
}

/** The level of the trials' paired intervals, "95%" or what their few pairs cover ("75.0%" for 3). */
function trialLevels(trials: readonly OptimiseTrial[]): string {
  const levels = [...new Set(trials.filter((t) => t.speedup).map(trialCiLevel))];
  return levels.length === 1 ? levels[0] : levels.length ? levels.join(' or ') : '95%';
}

/**
 * The final comparison in one line whose arithmetic works out (paired-figures.ts): the baseline as re-measured in
 * it, the final configuration as that times the speedup, and the speedup with its interval.
 */
function finalLine(r: WizardResult): string {
  const f = finalFigures(r.final, r.baseline, r.repeat, r.objective);
  const speedup = `speedup over the baseline ${x3(r.final.speedup.median)} [${x3(r.final.speedup.low)}, ${x3(r.final.speedup.high)}]`;
  if (!f) return `${speedup} (of samples per joule)`;
  if (!f.remeasured) return `${n0(f.best)} samples/s, the baseline as measured at the start (nothing was kept, so nothing was measured again)`;
  return `baseline re-measured in the final comparison ${n0(f.best)} samples/s; final configuration ${n0(f.candidate)} samples/s (that x ${f.speedup.median.toFixed(3)}); ${speedup}, ${f.level} CI over ${f.pairs} pairs`;
}

/** What the chosen repeats allow, said before a wizard starts: with fewer than 5 pairs trials only lean. */
export function repeatNote(repeat: number): string {
  return `repeat    ${pairsAllow(repeat)}`;
}

/** The result as a person reads it: the baseline and diagnosis, the limits, every attempt, then what to use. */
export function formatOptimise(r: EngineOptimiseResult): string {
  const b = r.baseline;
  const { stepsWidened, batchSearch } = r.target;
  const settings = r.target.final.config;
  const ci = (i: { low: number; median: number; high: number }) => `${n0(i.median)} samples/s (95% CI ${n0(i.low)}–${n0(i.high)})`;
  const lim = (name: string, l: { stepMs: number | null; baselineOverFloor: number | null; derivation: string }) =>
    `  ${name.padEnd(8)} ${l.stepMs === null ? 'n/a'.padStart(10) : `${l.stepMs.toFixed(3)} ms`.padStart(10)}  ${l.baselineOverFloor === null ? '' : `baseline ${l.baselineOverFloor.toFixed(1)}x`}  ${l.derivation}`;
  const rows = r.trials.flatMap((t) => {
    const conditions = conditionsSummary(t.conditions ?? []);
    return [
      `${String(t.index).padStart(3)}  ${t.change.label.padEnd(44)} ${t.speedup ? x3(t.speedup.median).padStart(7) : '-'.padStart(7)} ${
        t.speedup ? `[${x3(t.speedup.low)}, ${x3(t.speedup.high)}]`.padEnd(19) : ''.padEnd(19)
      } ${trialDecisionWords(t).padEnd(15)} ${t.why}${t.error ? ` (${t.error})` : ''}`,
      ...(conditions ? [`     conditions: ${conditions}`] : []),
    ];
  });
  const lines = [
    `optimise   ${printable(r.title)}  (${r.jobId}, preset ${r.preset}, ${r.repeat} repetitions per side, A/B/A/B${r.objective === 'energy' ? '; objective: samples per joule of GPU energy, the speedups below are of samples/J' : ''})`,
    ...(stepsWidened ? [`steps      ${stepsWidened.from} -> ${stepsWidened.to} per repetition: ${stepsWidened.from} steps measured ${stepsWidened.windowMs.toFixed(1)} ms, under the ${stepsWidened.minWindowSeconds} s asked for (--min-window); the baseline was measured again`] : []),
    `baseline   ${ci(b.samplesPerSec)}; step ${b.stepMs.toFixed(3)} ms; noise floor ±${(100 * b.noiseFloor).toFixed(1)}%; ${b.device}`,
    `           phases: ${Object.entries(b.phasesPercent)
      .map(([k, v]) => `${k} ${v.toFixed(1)}%`)
      .join(', ')}`,
    `diagnosis  ${r.diagnosis.summary}`,
    ...r.diagnosis.findings.map((f) => `  ${f.severity === 'warning' ? '!' : '-'} [${f.id}] ${f.text} (${f.measurement.name} = ${f.measurement.value.toFixed(2)} ${f.measurement.unit})`),
    'limits     floor per step, how far the baseline is from it, and how it was measured',
    lim('compute', r.limits.compute),
    lim('read', r.limits.read),
    lim('h2d', r.limits.h2d),
    `  ${r.limits.summary}`,
    `trials     change, speedup over the current best (median, ${trialLevels(r.trials)} CI), decision and why`,
    ...(rows.length ? rows : ['  none: no change to try']),
    ...(batchSearch ? [`batch      ${batchSearch.recommended !== null ? `the batch-size search recommends ${batchSearch.recommended}` : 'no batch-size search'}: ${batchSearch.verdict}`] : []),
    ...(r.skipped.length ? ['not tried', ...r.skipped.map((s) => `  - ${s.change.label}: ${s.why}`)] : []),
    `final      ${r.final.changes.length ? r.final.changes.join('; ') : 'no change kept'}`,
    `           ${finalLine(r)}`,
    `           ${r.final.verdict}`,
    ...r.final.proposals.map((p) => `  proposed (recipe change, not kept): ${p}`),
    `settings   read from ${settings.readFrom}, loader workers ${settings.options.loaderWorkers}, prefetch ${settings.options.prefetch}, batch ${settings.options.batchSize} x ${settings.options.accumulation}, ${settings.options.precision}`,
    `saved      ${r.runDir} (run of kind optimise) and optimise/${r.jobId}/state.json in the workspace`,
  ];
  return lines.join('\n');
}

/** A script wizard's result: the baseline, each trial with its decision, and the overrides to use as --set flags. */
export function formatScriptOptimise(r: ScriptOptimiseResult): string {
  const b = r.baseline;
  const { loader, lossCheck } = r.target;
  const overrides = r.target.final?.overrides ?? {};
  const setFlags = Object.entries(overrides).map(([k, v]) => `--set ${k}=${String(v)}`);
  return [
    `optimise   ${printable(r.title)}${r.objective === 'energy' ? '  (objective: samples per joule of GPU energy; the speedups below are of samples/J)' : ''}`,
    `loader     ${loader ? Object.entries(loader).map(([k, v]) => `${k}=${String(v)}`).join(', ') : 'no DataLoader seen'}`,
    `loss       ${lossCheckText(lossCheck, r.preset)}`,
    `baseline   ${n0(b.samplesPerSec.median)} samples/s (95% CI ${n0(b.samplesPerSec.low)}-${n0(b.samplesPerSec.high)}, noise floor ±${(100 * b.noiseFloor).toFixed(1)}%) on ${b.device}; data wait ${b.phasesPercent.data.toFixed(1)}% of the step`,
    `order      ${r.diagnosis?.summary ?? scriptBoundText(b)}`,
    'trials',
    ...(r.trials.length
      ? r.trials.flatMap((t) => [
          `  ${t.index}. ${t.change.label.padEnd(36)} ${trialDecisionWords(t).padEnd(13)} ${t.speedup ? `${x3(t.speedup.median)} [${x3(t.speedup.low)}, ${x3(t.speedup.high)}]` : t.error ?? ''}`,
          ...(t.compile ? [`     ${compileText(t.compile)}`] : []),
          ...(t.decision === 'confounded' ? [`     ${t.why}`] : []),
          ...(t.conditions && conditionsSummary(t.conditions) ? [`     conditions: ${conditionsSummary(t.conditions)}`] : []),
        ])
      : ['  none']),
    ...(r.skipped.length ? ['skipped', ...r.skipped.map((s) => `  - ${s.change.label}: ${s.why}`)] : []),
    `final      ${r.final.changes.length ? r.final.changes.join('; ') : 'no change kept'}; ${finalLine(r)}`,
    `verdict    ${r.final.verdict}`,
    ...r.final.proposals.map((p) => `proposal   ${p}`),
    // A proposed change that beat the noise, with how to apply it: the flag, and the line for the script.
    ...r.trials
      .filter((t) => t.decision === 'proposed')
      .map((t) => {
        const value = t.change.to as string | number | boolean;
        return `apply      --set ${t.change.knob}=${String(value)} (in code: ${overrideCode({ [t.change.knob]: value }, { device: b.device })[0]})`;
      }),
    `use        ${setFlags.length ? setFlags.join(' ') : r.final.proposals.length ? 'the script as it is, or a proposal above' : 'the script as it is (no override)'}`,
    ...overrideCode(overrides, { device: b.device }).map((line, i) => `${i === 0 ? 'in code   ' : '          '} ${line}`),
    `saved      ${r.runDir} (${r.seconds.toFixed(0)} s)`,
  ].join('\n');
}
