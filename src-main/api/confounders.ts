import type { ConditionsRow } from './optimise';
import type { Conditions } from './telemetry';

/**
 * When the machine's conditions make a measurement suspect (ADR 0028). Each threshold is a
 * difference a person would call "the machine was doing something else", well above what two
 * quiet repetitions differ by.
 */
/** Other load counts only when it competes: it and the target together fill the cores (less half a core of slack). */
const CPU_SLACK_CORES = 0.5;
/** Other load below a quarter of a core is background (a browser tab, the telemetry itself). */
const CPU_OTHER_MIN_CORES = 0.25;
/** Two sides' other load must differ by this much to call them different. */
const CPU_DIFF_CORES = 0.25;
/** A CPU clock that moved more than this between or within windows. */
const CLOCK_CHANGE = 0.1;
/**
 * A slowdown reason that held one window down (half its samples or more) and hardly touched the
 * other (under a tenth): a GPU at its power limit flickers in and out of it, which is no difference.
 */
const SLOWDOWN_HELD = 0.5;
const SLOWDOWN_ABSENT = 0.1;
/** The GPU's SM clock moves with its power limit by ~10% step to step; a median past this moved for a reason. */
const GPU_CLOCK_CHANGE = 0.15;

const SLOWDOWN_WORDS: Record<string, string> = {
  sw_power_cap: 'held at its power limit',
  hw_slowdown: 'slowed by the hardware (power or heat)',
  sw_thermal_slowdown: 'slowed by the driver for heat',
  hw_thermal_slowdown: 'slowed by the hardware for heat',
  hw_power_brake_slowdown: 'slowed by the power brake',
};

/** One thing that crowded a window: `kind` is stable (for comparing windows), `words` says it with its number. */
export interface Confounder {
  kind: string;
  words: string;
}

const meanMHz = (c: Conditions) => (c.cpuMHz ? (c.cpuMHz.start + c.cpuMHz.end) / 2 : null);
const moved = (a: number, b: number) => Math.abs(a - b) / Math.max(a, b, 1e-9) > CLOCK_CHANGE;

function cpuContended(c: Conditions): boolean {
  return c.otherCpuCores !== null && c.targetCpuCores !== null && c.otherCpuCores >= CPU_OTHER_MIN_CORES && c.otherCpuCores + c.targetCpuCores > c.cores - CPU_SLACK_CORES;
}

const cores = (x: number) => `${x.toFixed(2)} ${Math.abs(x - 1) < 0.005 ? 'core' : 'cores'}`;

/** What crowded one window, in words; [] when nothing did. */
export function confounders(c: Conditions): Confounder[] {
  const out: Confounder[] = [];
  if (cpuContended(c)) out.push({ kind: 'cpu-load', words: `other processes used ${cores(c.otherCpuCores as number)} of ${c.cores} while the target used ${cores(c.targetCpuCores as number)}` });
  if (c.cpuMHz && moved(c.cpuMHz.start, c.cpuMHz.end)) out.push({ kind: 'cpu-clock', words: `the CPU clock moved from ${c.cpuMHz.start.toFixed(0)} to ${c.cpuMHz.end.toFixed(0)} MHz` });
  for (const [reason, share] of Object.entries(c.gpuSlowdown)) {
    out.push({ kind: `gpu-slowdown:${reason}`, words: `the GPU was ${SLOWDOWN_WORDS[reason] ?? reason} in ${(100 * share).toFixed(0)}% of the samples` });
  }
  if (c.gpuOtherProcesses.length) out.push({ kind: 'gpu-processes', words: `other processes on the GPU: ${c.gpuOtherProcesses.join(', ')}` });
  return out;
}

/**
 * What differs between the conditions of two windows that should have been alike (the two sides of
 * an A/B pair), in words naming the sides; null when nothing does or either is unknown.
 */
export function conditionsDiffer(a: Conditions | null | undefined, b: Conditions | null | undefined, names: [string, string]): string | null {
  if (!a || !b) return null;
  const [na, nb] = names;
  const found: string[] = [];
  if (cpuContended(a) !== cpuContended(b) && a.otherCpuCores !== null && b.otherCpuCores !== null && Math.abs(a.otherCpuCores - b.otherCpuCores) >= CPU_DIFF_CORES) {
    found.push(`other processes used ${cores(a.otherCpuCores)} during ${na} and ${cores(b.otherCpuCores)} during ${nb}`);
  }
  const ma = meanMHz(a);
  const mb = meanMHz(b);
  if (ma !== null && mb !== null && moved(ma, mb)) found.push(`the CPU clock was ${ma.toFixed(0)} MHz during ${na} and ${mb.toFixed(0)} MHz during ${nb}`);
  for (const reason of new Set([...Object.keys(a.gpuSlowdown), ...Object.keys(b.gpuSlowdown)])) {
    const sa = a.gpuSlowdown[reason] ?? 0;
    const sb = b.gpuSlowdown[reason] ?? 0;
    if (Math.max(sa, sb) >= SLOWDOWN_HELD && Math.min(sa, sb) < SLOWDOWN_ABSENT) {
      found.push(`the GPU was ${SLOWDOWN_WORDS[reason] ?? reason} in ${(100 * sa).toFixed(0)}% of ${na}'s samples and ${(100 * sb).toFixed(0)}% of ${nb}'s`);
    }
  }
  if (a.gpuSmClockMHz !== null && b.gpuSmClockMHz !== null && Math.abs(a.gpuSmClockMHz - b.gpuSmClockMHz) / Math.max(a.gpuSmClockMHz, b.gpuSmClockMHz) > GPU_CLOCK_CHANGE) {
    found.push(`the GPU's SM clock was ${a.gpuSmClockMHz.toFixed(0)} MHz during ${na} and ${b.gpuSmClockMHz.toFixed(0)} MHz during ${nb}`);
  }
  const programs = (c: Conditions) => new Set(c.gpuOtherProcesses.map((p) => p.replace(/ \(\d+\)$/, '')));
  const pa = programs(a);
  const pb = programs(b);
  if (pa.size !== pb.size || [...pa].some((p) => !pb.has(p))) {
    const list = (s: Set<string>) => (s.size ? [...s].join(', ') : 'none');
    found.push(`other GPU processes during ${na}: ${list(pa)}; during ${nb}: ${list(pb)}`);
  }
  return found.length ? found.join('; ') : null;
}

/** The confounder kinds seen in any of several windows (one side of a comparison), with the words of the first window that had each. */
export function confoundersOf(windows: readonly (Conditions | null | undefined)[]): Confounder[] {
  const seen = new Map<string, Confounder>();
  for (const c of windows) if (c) for (const f of confounders(c)) if (!seen.has(f.kind)) seen.set(f.kind, f);
  return [...seen.values()];
}

/** One line per comparison for the CLI and the cards: what each side saw, and the pairs measured again. */
export function conditionsSummary(rows: readonly ConditionsRow[]): string | null {
  if (!rows.some((r) => r.conditions !== null)) return null;
  const side = (s: ConditionsRow['side']) => {
    const windows = rows.filter((r) => r.side === s).map((r) => r.conditions);
    const seen = confoundersOf(windows);
    if (seen.length) return seen.map((c) => c.words).join('; ');
    // Silence is only a finding where the load was measured: a window under half a second is not.
    return windows.some((c) => c && c.otherCpuCores !== null) ? 'no other load competing' : 'CPU load not measured (windows under 0.5 s)';
  };
  // Rows come in pairs (best, candidate): a pair measured again left two.
  const again = rows.filter((r) => r.remeasured !== null && r.side === 'best').length;
  return `best: ${side('best')}; candidate: ${side('candidate')}${again ? `; ${again} pair${again === 1 ? '' : 's'} measured again` : ''}`;
}

/** The Conditions table of one comparison, the same in the report and the app: one row per repetition. */
export const CONDITIONS_HEAD = ['Pair', 'Side', 'samples/s', 'Other load', 'Target', 'CPU clock', 'GPU slowdown', 'GPU SM clock', 'Other GPU processes', 'Counted'] as const;

export function conditionsTable(rows: readonly ConditionsRow[]): string[][] {
  const coresText = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : `${x.toFixed(2)} cores`);
  return rows.map((r) => {
    const c = r.conditions;
    const slowdown = c ? Object.entries(c.gpuSlowdown).map(([k, v]) => `${SLOWDOWN_WORDS[k] ?? k} ${(100 * v).toFixed(0)}%`) : [];
    return [
      String(r.pair),
      r.side,
      Math.round(r.samplesPerSec).toLocaleString('en-US'),
      coresText(c?.otherCpuCores),
      coresText(c?.targetCpuCores),
      c?.cpuMHz ? `${c.cpuMHz.start.toFixed(0)}→${c.cpuMHz.end.toFixed(0)} MHz` : 'n/a',
      !c ? 'n/a' : slowdown.length ? slowdown.join(', ') : 'none',
      c?.gpuSmClockMHz != null ? `${c.gpuSmClockMHz.toFixed(0)} MHz` : 'n/a',
      !c ? 'n/a' : c.gpuOtherProcesses.length ? c.gpuOtherProcesses.join(', ') : 'none',
      r.remeasured === null ? 'yes' : `measured again: ${r.remeasured}`,
    ];
  });
}
