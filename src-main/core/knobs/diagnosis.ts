import type { Diagnosis, DiagnosisFinding, OptimiseBaseline } from '../../api/optimise';
import { intervalLevel } from '../../api/order-interval';
import { formatValue } from '../../api/charts/theme';
import type { ScriptBound } from './knob';

/**
 * The decision tree's thresholds, named once (the GNN guide's style: "GPU
 * utilisation low + data wait high -> loader; memory near full -> batch or
 * precision"). Shares are of the steady-state step.
 */
export const DIAGNOSIS_THRESHOLDS = {
  dataWaitShare: 0.1,
  h2dShare: 0.1,
  /** A job of several ranks: the step's share waiting in all-reduces after the last rank arrived, above which communication sets the pace. */
  exposedCommunicationShare: 0.1,
  /** Forward, loss, backward and optimizer together above this: the arithmetic sets the pace. */
  computeShare: 0.7,
  /** Step time no timer accounts for (launches, host work, synchronisation). */
  hostOverheadShare: 0.15,
  gpuUtilization: 70,
  lowHeadroom: 0.1,
  highHeadroom: 0.5,
  /** A noise floor above this: only large gains can be proven; more steps or repetitions narrow it. */
  noisyFloor: 0.05,
  /**
   * A repetition's measured window below this (seconds) is too short to read: a few launches' jitter
   * is a large share of it, GPU power needs two samples of the 0.2 s sampler, and other load is read
   * over windows of 0.5 s or more. On an H100 `--steps 8` measured 60 ms windows, ±11.5% noise.
   */
  shortWindowSeconds: 0.5,
  /** The window the short-window advice asks for. */
  advisedWindowSeconds: 1,
} as const;

const pct = (x: number) => `${x.toFixed(1)}%`;
// Three significant digits, as every page and chart shows a time (a UI walk read "3.033 ms" above "step 3.03 ms").
const ms = (x: number) => formatValue(x, 'ms');

/**
 * What bounds the step, and the findings behind it, each naming the number it rests on. `steps`, the
 * optimizer steps each repetition measured, lets it judge the measuring window too.
 */
export function diagnose(b: OptimiseBaseline, steps?: number): Diagnosis {
  const t = DIAGNOSIS_THRESHOLDS;
  const share = b.phasesPercent;
  const computePct = share.forward + share.loss + share.backward + share.optimizer;
  const findings: DiagnosisFinding[] = [];
  const add = (id: string, severity: 'info' | 'warning', text: string, name: string, value: number, unit: string) =>
    findings.push({ id, severity, text, measurement: { name, value, unit } });
  const cuda = b.device.startsWith('cuda');
  // Shares are of the larger of the step and its timed phases (phaseShares): where the phases overran the step, say
  // so, or "5.535 ms of 5.831 ms (68.6%)" reads as wrong arithmetic (a UI walk did).
  const timed = Object.values(b.phasesMs).reduce((sum, v) => sum + v, 0);
  const whole = timed > b.stepMs * 1.001 ? `the ${ms(timed)} its phases were timed at (more than the ${ms(b.stepMs)} step)` : `the ${ms(b.stepMs)} step`;

  if (share.data > 100 * t.dataWaitShare) {
    add(
      'data-wait',
      'warning',
      `The step waits ${ms(b.phasesMs.data)} of ${whole} for data (${pct(share.data)}): the loader sets the pace. Try the cache, more loader workers, a deeper prefetch.`,
      'phasesPercent.data',
      share.data,
      '%',
    );
  }
  if (b.config.readFrom === 'source') {
    add('reading-source', 'info', 'The records are read from the source files in place, not from the cache: reading the cache is the first thing to try.', 'phasesMs.data', b.phasesMs.data, 'ms');
  }
  if (cuda && share.h2d > 100 * t.h2dShare) {
    add('h2d-wait', 'warning', `Host-to-device copies hold the step for ${ms(b.phasesMs.h2d)} (${pct(share.h2d)}): a deeper GPU prefetch lets copies overlap compute.`, 'phasesPercent.h2d', share.h2d, '%');
  }
  if (cuda && b.gpuUtilizationMean !== null && b.gpuUtilizationMean < t.gpuUtilization) {
    add('gpu-idle', 'warning', `GPU utilisation averaged ${pct(b.gpuUtilizationMean)} (below ${t.gpuUtilization}%): the GPU waits for the host.`, 'telemetry.gpuUtilizationMean', b.gpuUtilizationMean, '%');
  }
  if (share.other > 100 * t.hostOverheadShare) {
    add(
      'host-overhead',
      'warning',
      `${ms(b.phasesMs.other)} of the step (${pct(share.other)}) is in no timed phase: launch and host overhead. ${cuda ? 'CUDA graphs or a larger batch amortise it.' : 'A larger batch amortises it.'}`,
      'phasesPercent.other',
      share.other,
      '%',
    );
  }
  if (computePct > 100 * t.computeShare) {
    const cpu = !cuda && b.cpuMean !== null ? `; the CPU was ${pct(b.cpuMean)} busy` : '';
    add(
      'compute-bound',
      'info',
      `Forward, loss, backward and optimizer take ${pct(computePct)} of the step${cpu}: the arithmetic sets the pace, so loader settings cannot help much. ${cuda ? 'Mixed precision or CUDA graphs may.' : 'Only less arithmetic per sample or more cores can.'}`,
      'phasesPercent.compute',
      computePct,
      '%',
    );
  }
  if (b.deviceTotalBytes && b.deviceTotalBytes > 0) {
    const free = 1 - b.memoryBytes / b.deviceTotalBytes;
    if (free < t.lowHeadroom) {
      add('memory-full', 'warning', `Only ${pct(100 * free)} of device memory is free: a larger batch will not fit; mixed precision or gradient accumulation make room.`, 'memory.headroom', 100 * free, '%');
    } else if (free > t.highHeadroom) {
      add('memory-room', 'info', `${pct(100 * free)} of device memory is free: there is room for a larger batch.`, 'memory.headroom', 100 * free, '%');
    }
  }
  const windowSeconds = ((steps ?? 0) * b.stepMs) / 1000;
  if (steps !== undefined && b.stepMs > 0 && windowSeconds < t.shortWindowSeconds) {
    const advised = Math.ceil((1000 * t.advisedWindowSeconds) / b.stepMs);
    add(
      'short-window',
      'warning',
      `Each repetition measures ${steps} step${steps === 1 ? '' : 's'} of ${ms(b.stepMs)}: ${ms(1000 * windowSeconds)}, too short to read steadily (launch jitter, and no GPU power or other-load reading fits in it). Measure about ${t.advisedWindowSeconds} s a repetition: ${advised.toLocaleString('en-US')} steps or more.`,
      'baseline.windowSeconds',
      windowSeconds,
      's',
    );
  }
  if (b.noiseFloor > t.noisyFloor) {
    add(
      'noisy',
      'info',
      `The baseline's repetitions spread by ±${pct(100 * b.noiseFloor)} (half width of the median's ${intervalLevel(b.samplesPerSec)} CI): a change must gain more than that to be kept.`,
      'baseline.noiseFloor',
      100 * b.noiseFloor,
      '%',
    );
  }

  const candidates: [Diagnosis['bound'], number][] = [
    ['data', share.data],
    ['h2d', share.h2d],
    ['compute', computePct],
    ['host-overhead', share.other],
  ];
  const [bound, value] = candidates.reduce((a, c) => (c[1] > a[1] ? c : a));
  const words: Record<Diagnosis['bound'], string> = {
    data: 'waiting for data',
    h2d: 'waiting for host-to-device copies',
    compute: 'arithmetic (forward, loss, backward, optimizer)',
    communication: 'waiting in all-reduces between ranks',
    'host-overhead': 'time no phase accounts for (launch and host overhead)',
    unknown: 'nothing measured',
  };
  if (!(value > 0)) return { bound: 'unknown', summary: 'the baseline recorded no phase times', findings };
  return { bound, summary: `${pct(value)} of ${whole} is ${words[bound]}.`, findings }; // the bound is said beside it, once
}

// A script's bound: its probe times the data wait, not the engine's phases, and on a job of several ranks the time its
// ranks wait in all-reduces; the bound rests on those alone.
type ScriptBaseline = { phasesPercent: { data: number }; collectives?: { exposedShare: number; straggler: number | null; phase: 'data' | 'compute' | 'host' | null } };

/**
 * What bounds a script's step, from its baseline: the data wait past the engine's threshold puts the DataLoader's knobs
 * first; on a job of several ranks, the step waiting in all-reduces past its threshold puts DDP's first; otherwise the
 * model's (mixed precision, compile, channels_last) go first.
 */
export function scriptBound(baseline: ScriptBaseline): ScriptBound {
  if (baseline.phasesPercent.data > 100 * DIAGNOSIS_THRESHOLDS.dataWaitShare) return 'data';
  return (baseline.collectives?.exposedShare ?? 0) > DIAGNOSIS_THRESHOLDS.exposedCommunicationShare ? 'communication' : 'compute';
}

const LATE_IN = { data: 'waiting for data', compute: 'compute', host: 'host work' } as const;

/** The bound in words, for the wizard's output: what it rests on and what goes first, and the straggler where one was named. */
export function scriptBoundText(baseline: ScriptBaseline): string {
  const data = `data wait ${baseline.phasesPercent.data.toFixed(1)}% of the step`;
  const c = baseline.collectives;
  const comm = c ? `; ${(100 * c.exposedShare).toFixed(1)}% of it waits in all-reduces after the last rank arrived` : '';
  const straggler = c && c.straggler !== null ? `; rank ${c.straggler} is the straggler${c.phase ? `, late in ${LATE_IN[c.phase]}` : ''}` : '';
  const bound = scriptBound(baseline);
  const order =
    bound === 'data'
      ? `(over ${100 * DIAGNOSIS_THRESHOLDS.dataWaitShare}%): the loader's settings are tried first`
      : bound === 'communication'
        ? `(at most ${100 * DIAGNOSIS_THRESHOLDS.dataWaitShare}%)${comm} (over ${100 * DIAGNOSIS_THRESHOLDS.exposedCommunicationShare}%): communication sets the pace, so DDP's settings are tried first`
        : `(at most ${100 * DIAGNOSIS_THRESHOLDS.dataWaitShare}%)${comm}: the compute sets the pace, so the model's settings (mixed precision, compile, channels_last) are tried first`;
  return `${data} ${order}${straggler}`;
}

/** The bound as the wizard's diagnosis (both targets' results carry one): from the data wait and the collectives, no findings. */
export function scriptDiagnosis(baseline: ScriptBaseline): Diagnosis {
  return { bound: scriptBound(baseline), summary: scriptBoundText(baseline), findings: [] };
}
