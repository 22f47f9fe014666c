// The train command's progress on a terminal: the silent time before the first
// step is a ticking label, the cache build a bar redrawn in place.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { BuildProgress } from '../../src-main/api/datasets';
import { formatBuild, progressPrinter } from '../../src-main/cli/progress-bar';

/** A terminal of 120 columns that keeps what was written. */
function terminal() {
  const writes: string[] = [];
  const stream = { isTTY: true, columns: 120, write: (s: string) => writes.push(s) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, writes };
}

const progress = (over: Partial<BuildProgress>): BuildProgress => ({
  jobId: 'job1',
  phase: 'reading',
  records: 5_000,
  recordsTotal: 20_000,
  bytesWritten: 57_090_000,
  bytesTotal: 228_360_000,
  bytesPerSec: 40e6,
  etaSeconds: 4.3,
  ...over,
});

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('formatBuild', () => {
  it('shows records, a bar, the rate and the time left while reading', () => {
    expect(formatBuild(progress({}), 20)).toBe('caching dataset [#####...............]  25% 5,000/20,000 records 40 MB/s ETA 0:04');
  });

  it('sums up a finished build', () => {
    expect(formatBuild(progress({ phase: 'done', records: 20_000, bytesWritten: 228_360_000 }), 20)).toBe('dataset cached: 20,000 records, 228 MB');
  });
});

describe('progressPrinter on a terminal', () => {
  it('ticks the seconds of a waiting label until the build reports', () => {
    const { stream, writes } = terminal();
    const p = progressPrinter(stream);
    p.waiting('preparing the example dataset');
    vi.advanceTimersByTime(3_000);
    expect(writes).toEqual([0, 1, 2, 3].map((s) => `\r\x1b[2Kpreparing the example dataset... ${s} s`));
    p.onBuild(progress({}));
    vi.advanceTimersByTime(3_000);
    expect(writes).toHaveLength(5);
    expect(writes[4].startsWith('\r\x1b[2K')).toBe(true);
    expect(writes[4]).toMatch(/caching dataset \[#+\.+\] +25% 5,000\/20,000 records/);
  });

  it('ends the build line when it is done and stops ticking on clear', () => {
    const { stream, writes } = terminal();
    const p = progressPrinter(stream);
    p.onBuild(progress({ phase: 'done' }));
    expect(writes.at(-1)).toBe('\r\x1b[2Kdataset cached: 20,000 records, 228 MB\n');
    p.waiting('preparing the run');
    p.clear();
    const count = writes.length;
    vi.advanceTimersByTime(5_000);
    expect(writes).toHaveLength(count);
  });
});
