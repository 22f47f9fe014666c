// The log for lines a peer can cause at will: a few are written, the rest counted and said once.
import { afterEach, describe, expect, it, vi } from 'vitest';

import { limitedLog } from '../../src-main/server/log-limit';

afterEach(() => vi.useRealTimers());

describe('limitedLog', () => {
  it('writes the first lines of a window, counts the rest, and says how many once the window is over', () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    const log = limitedLog((l) => lines.push(l), 'resets', 3, 10_000);
    for (let i = 0; i < 1000; i++) log(`reset ${i}`);
    expect(lines).toEqual(['reset 0', 'reset 1', 'reset 2']);
    vi.advanceTimersByTime(10_000);
    expect(lines).toEqual(['reset 0', 'reset 1', 'reset 2', '997 more resets in 10 s were not logged']);
    // A new window writes again.
    log('reset 1000');
    expect(lines.at(-1)).toBe('reset 1000');
    vi.advanceTimersByTime(60_000);
    expect(lines).toHaveLength(5);
  });
});
