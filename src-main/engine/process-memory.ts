import { readFileSync, writeFileSync } from 'node:fs';

import type { ProcessMemory } from '../api/training';

function status(): Map<string, number> | null {
  try {
    const out = new Map<string, number>();
    for (const line of readFileSync('/proc/self/status', 'utf8').split('\n')) {
      const m = /^(\w+):\s+(\d+) kB$/.exec(line);
      if (m) out.set(m[1], Number(m[2]) * 1024);
    }
    return out;
  } catch {
    return null;
  }
}

/**
 * Starts measuring the process's peak: on Linux the high-water mark is reset (clear_refs "5") so it covers this run
 * only; elsewhere the lifetime peak stands in, said so. Runs in one host overlap rarely; when they do they share it.
 */
export function trackProcessMemory(): () => ProcessMemory {
  let scope: ProcessMemory['scope'] = 'process';
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    scope = 'run';
  } catch {
    // Not Linux, or a kernel without the reset: the lifetime peak.
  }
  return () => {
    const s = status();
    const hwm = s?.get('VmHWM');
    return {
      peakRssBytes: hwm ?? process.resourceUsage().maxRSS * 1024,
      scope: hwm !== undefined ? scope : 'process',
      fileRssBytes: s?.get('RssFile') ?? null,
    };
  };
}
