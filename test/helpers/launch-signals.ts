import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Follows test/fixtures/scripts/signal_launches.py: calls `start(n)` when launch n says it begins and
 * `stop(n)` when it says it ended (polling its signal folder every 20 ms), until close().
 */
export function followLaunches(dir: string, launches: number[], start: (n: number) => void, stop: (n: number) => void): { close(): void } {
  const started = new Set<number>();
  const stopped = new Set<number>();
  const timer = setInterval(() => {
    for (const n of launches) {
      if (!started.has(n) && existsSync(path.join(dir, `start-${n}`))) {
        started.add(n);
        start(n);
      }
      if (started.has(n) && !stopped.has(n) && existsSync(path.join(dir, `stop-${n}`))) {
        stopped.add(n);
        stop(n);
      }
    }
  }, 20);
  return {
    close() {
      clearInterval(timer);
      for (const n of started) if (!stopped.has(n)) stop(n);
    },
  };
}
