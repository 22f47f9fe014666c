import { promises as fs } from 'node:fs';

import si from 'systeminformation';

import type { HostSample } from '../../api/telemetry';
import { CLOCK_TICKS, PAGE_BYTES, statFields } from './process-group';

/** Bytes read and written so far by the named disks, from the text of /proc/diskstats (sectors are 512 bytes there). */
export function diskBytes(diskstats: string, disks: ReadonlySet<string>): { rx: number; wx: number } {
  let rx = 0;
  let wx = 0;
  for (const line of diskstats.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || !disks.has(f[2])) continue;
    const read = Number(f[5]);
    const written = Number(f[9]);
    if (Number.isFinite(read) && Number.isFinite(written)) {
      rx += read * 512;
      wx += written * 512;
    }
  }
  return { rx, wx };
}

/**
 * The machine's physical disks: the entries of /sys/block that are not virtual (loop, zram, device-mapper, md),
 * whose I/O their partitions' and volumes' I/O already is, so that nothing is counted twice.
 */
async function physicalDisks(): Promise<Set<string>> {
  const names = await fs.readdir('/sys/block');
  const links = await Promise.all(names.map((n) => fs.readlink(`/sys/block/${n}`).catch(() => '')));
  return new Set(names.filter((_, i) => links[i] !== '' && !links[i].includes('/virtual/')));
}

/**
 * The disks' I/O counters, read from /proc rather than through systeminformation's fsStats: that one starts
 * six processes a sample (a shell, lsblk, grep, cat), tens a second from a rig that samples at 2 Hz in
 * several processes. Null off Linux (systeminformation has no such counter on Windows either).
 */
async function readDiskBytes(): Promise<{ rx: number; wx: number } | null> {
  if (process.platform !== 'linux') return null;
  try {
    const [text, disks] = await Promise.all([fs.readFile('/proc/diskstats', 'utf8'), physicalDisks()]);
    return diskBytes(text, disks);
  } catch {
    return null;
  }
}

async function processStats(pid: number): Promise<{ cpuSeconds: number; rssBytes: number } | null> {
  if (process.platform !== 'linux') return null;
  try {
    const [stat, statm] = await Promise.all([fs.readFile(`/proc/${pid}/stat`, 'utf8'), fs.readFile(`/proc/${pid}/statm`, 'utf8')]);
    const rest = statFields(stat);
    const ticks = Number(rest[11]) + Number(rest[12]); // utime + stime
    return { cpuSeconds: ticks / CLOCK_TICKS, rssBytes: Number(statm.split(' ')[1]) * PAGE_BYTES };
  } catch {
    return null;
  }
}

/** Per-core CPU load, memory, swap, file-system I/O rate and the engine host's own use. */
export class HostSampler {
  private lastDisk: { t: number; rx: number; wx: number } | null = null;
  private lastProcess: { pid: number; t: number; cpuSeconds: number } | null = null;

  async sample(enginePid: number | null): Promise<HostSample> {
    const [load, mem, disk] = await Promise.all([si.currentLoad(), si.mem(), readDiskBytes()]);
    const now = Date.now();
    let read: number | null = null;
    let write: number | null = null;
    if (disk && Number.isFinite(disk.rx) && Number.isFinite(disk.wx)) {
      if (this.lastDisk && now > this.lastDisk.t) {
        const dt = (now - this.lastDisk.t) / 1000;
        read = Math.max(0, (disk.rx - this.lastDisk.rx) / dt);
        write = Math.max(0, (disk.wx - this.lastDisk.wx) / dt);
      }
      this.lastDisk = { t: now, rx: disk.rx, wx: disk.wx };
    }
    let engineHost: HostSample['engineHost'] = null;
    if (enginePid) {
      const p = await processStats(enginePid);
      let cpuPercent: number | null = null;
      if (p && this.lastProcess?.pid === enginePid && now > this.lastProcess.t) {
        cpuPercent = (100 * (p.cpuSeconds - this.lastProcess.cpuSeconds)) / ((now - this.lastProcess.t) / 1000);
      }
      if (p) this.lastProcess = { pid: enginePid, t: now, cpuSeconds: p.cpuSeconds };
      engineHost = { pid: enginePid, cpuPercent, rssBytes: p?.rssBytes ?? null };
    }
    return {
      cpuPerCore: load.cpus.map((c) => Math.round(c.load * 10) / 10),
      memUsedBytes: mem.total - mem.available,
      memAvailableBytes: mem.available,
      memTotalBytes: mem.total,
      swapUsedBytes: mem.swapused,
      swapTotalBytes: mem.swaptotal,
      diskReadBytesPerSec: read,
      diskWriteBytesPerSec: write,
      engineHost,
    };
  }
}
