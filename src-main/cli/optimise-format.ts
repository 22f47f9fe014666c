import { formatValue } from '../api/charts/theme';
import { conditionsSummary } from '../api/confounders';
import { withoutCodes } from '../api/error-words';
import { compileText, lossCheckText, trialCiLevel, trialDecisionWords } from '../api/charts/optimise-charts';
import type { Limits, OptimiseProgress, OptimiseTrial } from '../api/optimise';
import type { EngineOptimiseResult, OptimiseResult, ScriptOptimiseResult } from '../api/optimise-result';
import { isEngineOptimise, isScriptOptimise } from '../api/optimise-result';
import { intervalLevel, pairsAllow } from '../api/order-interval';
import { finalFigures } from '../api/paired-figures';
import type { WizardResult } from '../api/optimise';
import { overrideCode } from '../api/script-override-code';
import { measurementText } from '../api/measurement-words';
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
  // One line, whatever a resumed wizard's saved trial labels hold (a state file is the workspace's, and may be planted).
  return printable(progressWords(p));
}

function progressWords(p: OptimiseProgress): string {
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

/** A wizard's result as a person reads it, either target: the baseline and what bounds it, every attempt, then what to use. */
export function formatOptimise(r: OptimiseResult): string {
  const b = r.baseline;
  const energy = r.objective === 'energy' ? '; objective: samples per joule of GPU energy, the speedups below are of samples/J' : '';
  const rows = r.trials.flatMap((t) => {
    const conditions = conditionsSummary(t.conditions ?? []);
    return [
      `${String(t.index).padStart(3)}  ${t.change.label.padEnd(44)} ${t.speedup ? x3(t.speedup.median).padStart(7) : '-'.padStart(7)} ${
        t.speedup ? `[${x3(t.speedup.low)}, ${x3(t.speedup.high)}]`.padEnd(19) : ''.padEnd(19)
      } ${trialDecisionWords(t).padEnd(15)} ${t.why}${t.error ? ` (${withoutCodes(t.error)})` : ''}`,
      ...(t.compile ? [`     ${compileText(t.compile)}`] : []),
      ...(conditions ? [`     conditions: ${conditions}`] : []),
    ];
  });
  return [
    `optimise   ${printable(r.title)}  (${r.jobId}, preset ${r.preset}, ${r.repeat} repetitions per side, A/B/A/B${energy})`,
    ...(isEngineOptimise(r) ? engineStart(r) : isScriptOptimise(r) ? scriptStart(r) : []),
    `baseline   ${n0(b.samplesPerSec.median)} samples/s (${intervalLevel(b.samplesPerSec)} CI ${n0(b.samplesPerSec.low)}–${n0(b.samplesPerSec.high)}); step ${formatValue(b.stepMs, 'ms')}; noise floor ±${(100 * b.noiseFloor).toFixed(1)}%; ${b.device}`,
    `           phases: ${Object.entries(b.phasesPercent)
      .map(([k, v]) => `${k} ${v.toFixed(1)}%`)
      .join(', ')}`,
    `diagnosis  ${r.diagnosis ? `${r.diagnosis.bound}-bound: ${r.diagnosis.summary}` : scriptBoundText(b)}`,
    ...(r.diagnosis?.findings ?? []).map((f) => `  ${f.severity === 'warning' ? '!' : '-'} [${f.id}] ${f.text} (${measurementText(f.measurement)})`),
    ...(r.limits ? limitLines(r.limits) : []),
    `trials     change, speedup over the current best (median, ${trialLevels(r.trials)} CI), decision and why`,
    ...(rows.length ? rows : ['  none: no change to try']),
    ...(isEngineOptimise(r) && r.target.batchSearch
      ? [`batch      ${r.target.batchSearch.recommended !== null ? `the batch-size search recommends ${r.target.batchSearch.recommended}: ${r.target.batchSearch.verdict}` : `candidate twice the batch; the batch-size search was ${r.target.batchSearch.verdict}`}`]
      : []),
    ...(r.skipped.length ? ['not tried', ...r.skipped.map((s) => `  - ${s.change.label}: ${s.why}`)] : []),
    `final      ${r.final.changes.length ? r.final.changes.join('; ') : 'no change kept'}; ${finalLine(r)}`,
    `verdict    ${r.final.verdict}`,
    ...r.final.proposals.map((p) => `proposal   ${p}`),
    ...(isEngineOptimise(r) ? engineUse(r) : isScriptOptimise(r) ? scriptUse(r) : []),
  ]
    // Each element is one line: a newline or any control character inside one (a label, a reason or a verdict from a
    // resumed wizard's saved state, which may be planted) is shown escaped, never as a line of its own (re-attack of F1).
    .map((line) => printable(line))
    .join('\n');
}

/** What the engine's wizard did before its baseline counted: the steps it widened. */
function engineStart(r: EngineOptimiseResult): string[] {
  const w = r.target.stepsWidened;
  return w ? [`steps      ${w.from} -> ${w.to} per repetition: ${w.from} steps measured ${w.windowMs.toFixed(1)} ms, under the ${w.minWindowSeconds} s asked for (--min-window); the baseline was measured again`] : [];
}

/** What a script's wizard found before its baseline: the script's own loader, and the loss guard. */
function scriptStart(r: ScriptOptimiseResult): string[] {
  const { loader, lossCheck } = r.target;
  return [`loader     ${loader ? Object.entries(loader).map(([k, v]) => `${k}=${String(v)}`).join(', ') : 'no DataLoader seen'}`, `loss       ${lossCheckText(lossCheck, r.preset)}`];
}

function limitLines(l: Limits): string[] {
  const lim = (name: string, f: { stepMs: number | null; baselineOverFloor: number | null; derivation: string }) =>
    // Figures as the page and the ADR write them (a UI walk read "1133.0x" here, "1,133×" there).
    `  ${name.padEnd(8)} ${f.stepMs === null ? 'n/a'.padStart(10) : formatValue(f.stepMs, 'ms').padStart(10)}  ${f.baselineOverFloor === null ? '' : `baseline ${formatValue(f.baselineOverFloor)}x`}  ${f.derivation}`;
  return ['limits     floor per step, how far the baseline is from it, and how it was measured', lim('compute', l.compute), lim('read', l.read), lim('h2d', l.h2d), `  ${l.summary}`];
}

/** The engine's final settings, and where the wizard is saved. */
function engineUse(r: EngineOptimiseResult): string[] {
  const o = r.target.final.config.options;
  return [
    `settings   read from ${r.target.final.config.readFrom}, loader workers ${o.loaderWorkers}, prefetch ${o.prefetch}, batch ${o.batchSize} x ${o.accumulation}, ${o.precision}`,
    `saved      ${r.runDir} (the wizard took ${r.seconds.toFixed(1)} s) and optimise/${r.jobId}/state.json in the workspace`,
  ];
}

/** A script's kept overrides as --set flags and as code for the script; a proposal that beat the noise with how to apply it. */
function scriptUse(r: ScriptOptimiseResult): string[] {
  const overrides = r.target.final?.overrides ?? {};
  const setFlags = Object.entries(overrides).map(([k, v]) => `--set ${k}=${String(v)}`);
  const device = r.baseline.device;
  return [
    ...r.trials
      .filter((t) => t.decision === 'proposed')
      .map((t) => {
        const value = t.change.to as string | number | boolean;
        return `apply      --set ${t.change.knob}=${String(value)} (in code: ${overrideCode({ [t.change.knob]: value }, { device })[0]})`;
      }),
    `use        ${setFlags.length ? setFlags.join(' ') : r.final.proposals.length ? 'the script as it is, or a proposal above' : 'the script as it is (no override)'}`,
    ...overrideCode(overrides, { device }).map((line, i) => `${i === 0 ? 'in code   ' : '          '} ${line}`),
    `saved      ${r.runDir} (the wizard took ${r.seconds.toFixed(1)} s)`,
  ];
}
