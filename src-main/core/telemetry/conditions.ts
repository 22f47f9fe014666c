import { execFile } from 'node:child_process';
import { promises as fs, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

import type { Conditions, TelemetrySample } from '../../api/telemetry';
import { median } from '../stats/medians';
import { COMPUTE_APPS_ARGS, type ComputeApp, parseComputeApps } from './nvidia-smi-parser';

/** Linux reports CPU time in clock ticks; 100 per second on every mainstream kernel build. */
const CLOCK_TICKS = 100;
/** The reasons that slow a busy GPU down; idle, sync boost and clock settings are not the neighbours' doing. */
export const SLOWDOWN_REASONS = ['sw_power_cap', 'hw_slowdown', 'sw_thermal_slowdown', 'hw_thermal_slowdown', 'hw_power_brake_slowdown'] as const;
const COMPUTE_APPS_TIMEOUT_MS = 3000;
/** The shortest window whose CPU load is told (see finish()). */
export const MIN_CPU_WINDOW_SECONDS = 0.5;

/** The target's processes: our engine host (one pid, its threads included) or a script's process group. */
export type ConditionsTarget = { pid: number } | { pgid: number };

export interface ConditionsProbe {
  /** nvidia-smi to ask for compute processes; null where there is no GPU. */
  nvidiaSmi: string | null;
  /** Trainbench's own processes besides this one (the engine host while a script is measured). */
  ownPids: () => number[];
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces). */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** utime + stime + the reaped children's, seconds: children's time moves into the parent's when they exit. */
function cpuOf(fields: string[]): number {
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
}

/** Busy CPU seconds of the whole machine so far: every state but idle and iowait, the hypervisor's steal included. */
async function machineBusySeconds(): Promise<number | null> {
  try {
    const line = (await fs.readFile('/proc/stat', 'utf8')).split('\n', 1)[0];
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already inside user)
    const busy = f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] ?? 0);
    return Number.isFinite(busy) ? busy / CLOCK_TICKS : null;
  } catch {
    return null;
  }
}

async function pidCpuSeconds(pid: number): Promise<number> {
  try {
    return cpuOf(statFields(await fs.readFile(`/proc/${pid}/stat`, 'utf8')));
  } catch {
    return 0; // gone: its time went to its parent, which is not ours to count
  }
}

async function pgidOf(pid: number): Promise<number | null> {
  try {
    return Number(statFields(await fs.readFile(`/proc/${pid}/stat`, 'utf8'))[2]);
  } catch {
    return null;
  }
}

/**
 * Children this process has reaped, seconds: a launch that ended before the window's last read took
 * its whole tree's time here (its own reaped workers' included).
 */
async function reapedSeconds(): Promise<number> {
  try {
    const f = statFields(await fs.readFile('/proc/self/stat', 'utf8'));
    return (Number(f[13]) + Number(f[14])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/**
 * Every process of a group (zombies too: their time is theirs until reaped), summed. Read synchronously:
 * a few microseconds a process, where awaiting each file cost ~0.4 ms (60 ms a window on 70 processes).
 */
function groupCpuSeconds(pgid: number): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = statFields(readFileSync(`/proc/${entry}/stat`, 'utf8'));
      if (Number(fields[2]) === pgid) total += cpuOf(fields);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** Mean clock of the cores from /proc/cpuinfo (x86 and most ARM kernels report it); null where it is not. */
async function cpuMHz(): Promise<number | null> {
  try {
    const values = [...(await fs.readFile('/proc/cpuinfo', 'utf8')).matchAll(/^cpu MHz\s*:\s*([\d.]+)/gm)].map((m) => Number(m[1]));
    return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
  } catch {
    return null;
  }
}

function computeApps(command: string): Promise<ComputeApp[]> {
  return new Promise((resolve) => {
    execFile(command, COMPUTE_APPS_ARGS, { timeout: COMPUTE_APPS_TIMEOUT_MS, maxBuffer: 1 << 20 }, (err, stdout) => resolve(err ? [] : parseComputeApps(stdout)));
  });
}

interface Reading {
  t: number;
  busy: number | null;
  target: number;
  own: number;
  mhz: number | null;
}

async function read(target: ConditionsTarget, probe: ConditionsProbe): Promise<Reading> {
  const linux = process.platform === 'linux';
  const own = process.cpuUsage();
  const ownPids = probe.ownPids().filter((p) => !('pid' in target && p === target.pid));
  const [busy, targetSeconds, ownChildren, mhz] = await Promise.all([
    linux ? machineBusySeconds() : Promise.resolve(null),
    linux ? ('pid' in target ? pidCpuSeconds(target.pid) : reapedSeconds().then((r) => r + groupCpuSeconds(target.pgid))) : Promise.resolve(0),
    linux ? Promise.all(ownPids.map(pidCpuSeconds)) : Promise.resolve([]),
    linux ? cpuMHz() : Promise.resolve(null),
  ]);
  return { t: Date.now(), busy, target: targetSeconds, own: (own.user + own.system) / 1e6 + ownChildren.reduce((a, b) => a + b, 0), mhz };
}

/** The GPU side of a window, from the telemetry samples it recorded. */
export function gpuConditions(samples: readonly TelemetrySample[]): Pick<Conditions, 'gpuSlowdown' | 'gpuSmClockMHz' | 'gpuTemperatureMaxC'> {
  const withGpus = samples.filter((s) => s.gpus.length > 0);
  const gpuSlowdown: Record<string, number> = {};
  for (const reason of SLOWDOWN_REASONS) {
    const hit = withGpus.filter((s) => s.gpus.some((g) => g.throttleReasons?.includes(reason))).length;
    if (hit > 0) gpuSlowdown[reason] = hit / withGpus.length;
  }
  const clocks = withGpus.map((s) => s.gpus.map((g) => g.clockSmMHz).filter((v): v is number => v !== null)).filter((c) => c.length).map((c) => c.reduce((a, b) => a + b, 0) / c.length);
  const temps = withGpus.flatMap((s) => s.gpus.map((g) => g.temperatureC).filter((v): v is number => v !== null));
  return { gpuSlowdown, gpuSmClockMHz: clocks.length ? median(clocks) : null, gpuTemperatureMaxC: temps.length ? Math.max(...temps) : null };
}

/**
 * Starts watching the machine around a measured window: CPU time of the machine, of the target and
 * of Trainbench at both ends (two reads of /proc, nothing in between, so the window pays nothing),
 * the cores' clock, and the GPU's compute processes at both ends. finish() takes the window's
 * telemetry samples for the GPU's slowdown reasons and clock.
 */
export function watchConditions(target: ConditionsTarget, probe: ConditionsProbe): { finish(samples: readonly TelemetrySample[]): Promise<Conditions> } {
  const first = read(target, probe);
  const appsAtStart = probe.nvidiaSmi ? computeApps(probe.nvidiaSmi).then((apps) => others(apps, target, probe)) : Promise.resolve([]);
  return {
    async finish(samples) {
      const [a, atStart] = await Promise.all([first, appsAtStart]);
      const [b, atEnd] = await Promise.all([read(target, probe), probe.nvidiaSmi ? computeApps(probe.nvidiaSmi).then((apps) => others(apps, target, probe)) : Promise.resolve([])]);
      const seconds = Math.max(0, (b.t - a.t) / 1000);
      const cores = os.cpus().length || 1;
      // CPU time comes in 10 ms ticks: over a shorter window the load of two cores could not be told apart from noise.
      const long = seconds >= MIN_CPU_WINDOW_SECONDS;
      const targetCpuCores = long && a.busy !== null ? Math.max(0, b.target - a.target) / seconds : null;
      const otherCpuCores =
        long && a.busy !== null && b.busy !== null && targetCpuCores !== null
          ? Math.min(cores, Math.max(0, (b.busy - a.busy - (b.target - a.target) - (b.own - a.own)) / seconds))
          : null;
      const gpuOtherProcesses = [...new Set([...atStart, ...atEnd])].slice(0, 64);
      return {
        seconds,
        cores,
        targetCpuCores,
        otherCpuCores,
        cpuMHz: a.mhz !== null && b.mhz !== null ? { start: a.mhz, end: b.mhz } : null,
        ...gpuConditions(samples),
        gpuOtherProcesses,
      };
    },
  };
}

/** Compute processes that are neither the target's nor Trainbench's, as "name (pid)". */
async function others(apps: ComputeApp[], target: ConditionsTarget, probe: ConditionsProbe): Promise<string[]> {
  const ours = new Set([process.pid, ...probe.ownPids()]);
  const out: string[] = [];
  for (const app of apps) {
    if (ours.has(app.pid)) continue;
    if ('pid' in target ? app.pid === target.pid : (await pgidOf(app.pid)) === target.pgid) continue;
    out.push(`${app.name} (${app.pid})`);
  }
  return out;
}
