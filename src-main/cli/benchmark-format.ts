import { floorWords, scalingWords } from '../api/collectives';
import type { BenchmarkPhases } from '../api/benchmark';
import { PHASE_NAMES_WITH_OTHER } from '../api/benchmark';
import type { BenchmarkResult, EngineBenchmarkResult, ScriptBenchmarkResult } from '../api/benchmark-result';
import { isEngineBenchmark, isScriptBenchmark } from '../api/benchmark-result';
import { processMemoryText } from '../api/process-memory-words';
import { intervalLevel } from '../api/order-interval';
import { printable } from '../api/shell-word';
import { energyText, floorRows, SCRIPT_ENERGY_WINDOW, utilisationText } from '../api/utilisation-words';

// What `benchmark-training` prints: a benchmark's result, either target (a script's is a command after '--').

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const mb = (b: number | null) => (b === null ? 'n/a' : `${(b / 1e6).toFixed(1)} MB`);

function phaseTable(ms: BenchmarkPhases, percent: BenchmarkPhases): string[] {
  return PHASE_NAMES_WITH_OTHER.map((p) => `  ${p.padEnd(10)} ${ms[p].toFixed(3).padStart(10)} ms ${percent[p].toFixed(1).padStart(6)}%`);
}

/** What the engine alone prints: its recipe, the epoch it predicts, its memory model beside its allocations. */
function engineLines(r: EngineBenchmarkResult): { setup: string; epoch: string[]; memory: string[] } {
  const e = r.target;
  const m = e.memory;
  const kinds = (x: typeof m.predicted) =>
    `weights ${mb(x.weights)}, gradients ${mb(x.gradients)}, optimizer ${mb(x.optimizerState)}, activations ${mb(x.activations + x.activationGrads)}, batches ${mb(x.batchData)}, workspace ${mb(x.workspace)}, total ${mb(x.total)}`;
  return {
    setup: `setup      ${r.device}, ${e.precision}, ${e.optimizer}, batch ${r.batchSize} x accumulation ${e.accumulation}; ${r.warmupSteps} warm-up + ${r.steps} measured steps, ${r.repeat} repetition(s), each a fresh trainer`,
    epoch: [`epoch      ${e.stepsPerEpoch} steps: ${e.predictedEpochSeconds.fromSteadyState.toFixed(2)} s from the steady state, ${e.predictedEpochSeconds.fromWallClock.toFixed(2)} s from the wall-clock mean`],
    memory: [`memory     ${m.device}: measured ${kinds(m.measured)}`, `           predicted ${kinds(m.predicted)}${m.deviceTotalBytes ? `; device ${mb(m.deviceTotalBytes)}` : ''}`, ...processPeaks(r)],
  };
}

/** Each repetition's engine-process peak beside the accounting: flat across repetitions, or something is kept. */
function processPeaks(r: EngineBenchmarkResult): string[] {
  const peaks = r.repetitions.flatMap((x) => (x.target.processMemory ? [x.target.processMemory] : []));
  if (!peaks.length) return [];
  const mb = (b: number) => `${(b / 1e6).toFixed(0)} MB`;
  return [`           engine process peak per repetition: ${peaks.map((p) => mb(p.peakRssBytes)).join(', ')} resident (${processMemoryText(peaks[peaks.length - 1])})`];
}

/** A script launch's whole process tree: how many, their CPU, their peak memory. */
function processTreeLine(r: ScriptBenchmarkResult): string[] {
  const t = r.repetitions[r.repetitions.length - 1].target.processTree;
  if (!t) return [];
  return [`processes  ${t.processes} at most (ranks, DataLoader workers); CPU ${t.cpuPercent === null ? 'n/a' : `${t.cpuPercent.toFixed(0)}% of one core`} over the measured steps; peak RSS ${mb(t.peakRssBytes)} (the last launch's whole tree)`];
}

/** The model FLOPs the probe counted (an estimate) and the utilisation they give, or why there is none. */
function scriptFlopsLines(r: ScriptBenchmarkResult): string[] {
  const flops = r.target.flops;
  if (!flops) return [];
  if (flops.forwardPerSample === null || !r.utilisation) return [`utilisation not estimated: ${flops.method}`];
  return [
    `utilisation ${utilisationText(r.utilisation)}`,
    `           an estimate: ${n0(flops.forwardPerSample)} forward FLOPs per sample counted by ${flops.method}, over ${flops.layers} layer(s), three times for training`,
    ...(flops.recomputePerSample ? [`           activation checkpointing runs ${n0(flops.recomputePerSample)} more forward FLOPs per sample again in the backward: extra work, not counted in the utilisation`] : []),
  ];
}

/** The compute, copy and data floors beside the measured step, as optimise's limits section gives the engine's. */
function floorLines(r: ScriptBenchmarkResult): string[] {
  const floors = r.target.floors;
  if (!floors) return [];
  return [
    `floors     per step and rank, how far the ${floors.stepMs.toFixed(3)} ms step is from each, and how it was measured`,
    ...floorRows(floors).map((f) => `  ${f.name.padEnd(8)} ${f.stepMs.padStart(10)}  ${f.over.padEnd(12)}  ${f.derivation}`),
    `  ${floors.summary}`,
  ];
}

const PHASE_WORDS = { data: 'waiting for data', compute: 'compute', host: 'host work (outside data, compute and communication)' } as const;

/** A job of several ranks at its collectives: who the others wait for, and what communication costs (issue 40). */
function collectiveLines(c: ScriptBenchmarkResult['target']['collectives']): string[] {
  if (!c) return [];
  const bandwidth =
    c.busBytesPerSec !== null
      ? `${(c.busBytesPerSec / 1e9).toFixed(2)} GB/s bus bandwidth`
      : c.timing === 'step'
        ? 'bandwidth not measured (timed once a step; --collectives-per-bucket times each bucket)'
        : 'bandwidth not measured';
  return [
    c.straggler === null ? `straggler  ${printable(c.why)}` : `straggler  rank ${c.straggler}, late in ${c.phase ? PHASE_WORDS[c.phase] : 'no one phase'}: ${printable(c.why)}`,
    `collectives ${c.perStep.count} per step (${mb(c.perStep.bytes)}); ${(100 * c.exposedShare).toFixed(1)}% of the step waits in them after the last rank arrived; all-reduce ${bandwidth}`,
    ...(floorWords(c) ? [`floor      between these ranks, an all-reduce alone: ${floorWords(c)}`] : []),
    ...(scalingWords(c) ? [`scaling    ${scalingWords(c)} against the job on this node alone`] : []),
  ];
}

/** What only a script prints: its ranks and their data wait, how the phases were timed, its memory, FLOPs, floors and overrides. */
function scriptLines(r: ScriptBenchmarkResult): { setup: string; dataWait: string[]; phaseNote: string[]; memory: string[]; applied: string[] } {
  const s = r.target;
  return {
    setup: `setup      ${r.device}, batch ${r.batchSize ?? 'unknown'} per rank, ${s.worldSize} rank(s); ${r.warmupSteps} warm-up + ${r.steps} measured steps, ${r.repeat} launch(es)`,
    dataWait: [
      `data wait  ${s.dataWait.msPerStep.toFixed(3)} ms per step, ${s.dataWait.percent.toFixed(1)}% of the step (rank ${s.dataWait.rank}, the slowest, in the last launch; the phase table below is the mean over the launches)`,
      ...(s.worldSize > 1
        ? ['ranks      rank  samples/s  steps  data wait', ...s.ranks.map((k) => `           ${String(k.rank).padStart(4)} ${n0(k.samplesPerSec).padStart(10)} ${String(k.measuredSteps).padStart(6)}  ${k.dataWaitPercent.toFixed(1)}%`)]
        : []),
      ...collectiveLines(s.collectives),
    ],
    phaseNote: [`           ${s.phaseNote}`],
    memory: [
      `memory     ${s.memory.device}: CUDA peak ${mb(s.memory.cudaPeakBytes)}${s.memory.cudaTotalBytes ? ` of ${mb(s.memory.cudaTotalBytes)}` : ''}; host peak RSS ${mb(s.memory.hostPeakRssBytes)} (the rank process's own high-water mark, from its start)`,
      ...processTreeLine(r),
      ...scriptFlopsLines(r),
      ...floorLines(r),
    ],
    applied: [`applied    ${s.applied.length ? [...new Set(s.applied.map((a) => `${a.key}=${a.value} (${a.where})`))].join('; ') : 'no overrides'}`],
  };
}

const pct = (x: number | null) => (x === null ? 'n/a' : `${x.toFixed(0)}%`);

/** The GPU and CPU load over the measured window (a script's is in its energy and process lines). */
function telemetryLine(r: BenchmarkResult): string {
  const t = r.telemetry;
  return t.gpuUtilizationMean === null
    ? `telemetry  GPU: ${t.gpu}; CPU ${pct(t.cpuMean)} mean over ${t.samples} samples in the measured window`
    : `telemetry  GPU ${t.gpu}: utilisation ${pct(t.gpuUtilizationMean)} mean, ${pct(t.gpuUtilizationP95)} p95; peak memory ${t.gpuMemoryPeakMiB ?? 'n/a'} MiB; power ${t.gpuPowerMeanW?.toFixed(0) ?? 'n/a'} W mean; CPU ${pct(t.cpuMean)} (${t.samples} samples in the measured window)`;
}

/** A benchmark of either target as a person reads it: figures first, then where the step goes, then what to do. */
export function formatBenchmark(r: BenchmarkResult): string {
  const ci = r.samplesPerSecCi;
  const engine = isEngineBenchmark(r) ? engineLines(r) : null;
  const script = isScriptBenchmark(r) ? scriptLines(r) : null;
  const ranks = r.target.kind === 'script' && r.target.worldSize > 1 ? ' (sum over ranks)' : '';
  const energy = energyText(r);
  const lines = [
    `benchmark  ${printable(r.title)}`,
    engine?.setup ?? script?.setup ?? '',
    '',
    engine ? 'rep  samples/s   steady ms   wall-clock ms' : 'launch  samples/s   steady ms   wall-clock ms  ended',
    ...r.repetitions.map((x) => {
      const figures = `${n0(x.samplesPerSec).padStart(10)} ${x.steadyStateMeanMs.toFixed(3).padStart(11)} ${x.wallClockMeanMs.toFixed(3).padStart(15)}`;
      if (x.target.kind === 'engine') return `${String(x.repetition).padStart(3)} ${figures}`;
      return `${String(x.repetition).padStart(6)} ${figures}  ${x.target.ended === 'steps' ? 'stopped by the probe' : 'by itself'}`;
    }),
    '',
    r.repeat < 2
      ? `samples/s  ${n0(ci.median)}${ranks}, one ${engine ? 'repetition' : 'launch'}: no interval (2 or more give one, 6 or more a 95% one)`
      : `samples/s  ${n0(ci.median)} median${ranks}, ${intervalLevel(ci)} CI [${n0(ci.low)}, ${n0(ci.high)}] (order statistics over ${r.repeat} ${engine ? 'repetitions' : 'launches'})`,
    engine
      ? `step time  ${r.stepTime.steadyStateMeanMs.toFixed(3)} ms steady-state mean (after warm-up; samples/s above is the repetitions' median, so batch / step need not equal it); ${r.stepTime.wallClockMeanMs.toFixed(3)} ms wall-clock mean (every step, warm-up included)`
      : `step time  ${r.stepTime.steadyStateMeanMs.toFixed(3)} ms steady-state mean (samples/s above is the launches' median, so batch / step need not equal it); ${r.stepTime.wallClockMeanMs.toFixed(3)} ms wall-clock mean (warm-up included)`,
    ...(engine?.epoch ?? script?.dataWait ?? []),
    'phases     ms per step over the measured steps, and share of the step',
    ...phaseTable(r.phasesMs, r.phasesPercent),
    ...(script?.phaseNote ?? []),
    ...(engine?.memory ?? script?.memory ?? []),
    ...(engine && r.utilisation ? [`utilisation ${utilisationText(r.utilisation)}`] : []),
    ...(energy ? [`energy     ${energy}`, ...(script && r.energy ? [`           ${SCRIPT_ENERGY_WINDOW}`] : [])] : []),
    ...(engine ? [telemetryLine(r)] : []),
    ...(script?.applied ?? []),
    'findings',
    ...(r.findings.length ? r.findings.map((f) => `  ${f.severity === 'warning' ? '!' : '-'} ${f.text}`) : ['  none: no threshold was crossed']),
    `saved      ${r.runDir} in the workspace (run.json, events.jsonl, ${engine ? '' : 'output-rep*.log, '}telemetry-rep*.jsonl)`,
  ];
  return lines.join('\n');
}
