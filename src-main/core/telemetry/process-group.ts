import { readdirSync, readFileSync } from 'node:fs';

/** Linux reports process CPU time in clock ticks; 100 per second on every mainstream kernel build. */
export const CLOCK_TICKS = 100;
export const PAGE_BYTES = 4096;

/** The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses): state, ppid, pgrp, ... */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

interface TreeSample {
  t: number;
  processes: number;
  cpuSeconds: number;
  rssBytes: number;
}

/** Every process of a process group (the launch: the script, torchrun's ranks, DataLoader workers), summed. */
function sampleGroup(pgid: number): TreeSample {
  let processes = 0;
  let ticks = 0;
  let pages = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const rest = statFields(stat); // state, ppid, pgrp, ... utime (12th), stime, ... rss (22nd)
    if (Number(rest[2]) !== pgid || rest[0] === 'Z') continue;
    processes++;
    ticks += Number(rest[11]) + Number(rest[12]);
    pages += Number(rest[21]);
  }
  return { t: Date.now(), processes, cpuSeconds: ticks / CLOCK_TICKS, rssBytes: pages * PAGE_BYTES };
}

export interface ProcessTreeSummary {
  /** Most processes alive at once. */
  processes: number;
  /** CPU used by the whole tree over the measured window, in percent of one core (200 = two cores busy). */
  cpuPercent: number | null;
  /** Largest resident memory of the whole tree at one sample. */
  peakRssBytes: number;
}

/**
 * Samples a launch's process group while it runs, so the result shows what the
 * script's whole tree used (its DataLoader workers are where data loading burns
 * CPU), not only the main process. Linux only (reads /proc); null elsewhere.
 */
export function sampleProcessTree(pgid: number, intervalMs = 200) {
  if (process.platform !== 'linux') return null;
  const samples: TreeSample[] = [];
  let windowStart: TreeSample | null = null;
  const take = () => {
    const s = sampleGroup(pgid);
    if (s.processes > 0) samples.push(s);
  };
  take();
  const timer = setInterval(take, intervalMs);
  return {
    /** The first measured step: CPU is counted from here. */
    markWindowStart(): void {
      if (windowStart) return;
      take();
      windowStart = samples[samples.length - 1] ?? null;
    },
    /** Ends sampling; `until` (ms since the epoch): the window's end, when the launch went on after it. */
    stop(until?: number): ProcessTreeSummary | null {
      clearInterval(timer);
      if (until === undefined) take(); // closed at the last measured step, the tree still runs: its CPU up to here
      if (samples.length === 0) return null;
      const last = (until === undefined ? undefined : samples.filter((s) => s.t <= until).at(-1)) ?? samples[samples.length - 1];
      const seconds = windowStart ? (last.t - windowStart.t) / 1000 : 0;
      return {
        processes: Math.max(...samples.map((s) => s.processes)),
        cpuPercent: windowStart && seconds > 0 ? (100 * (last.cpuSeconds - windowStart.cpuSeconds)) / seconds : null,
        peakRssBytes: Math.max(...samples.map((s) => s.rssBytes)),
      };
    },
  };
}
