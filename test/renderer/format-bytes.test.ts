// Sizes and times as people read them (issue 41 item 5): no "0.0 MB" for a small file, one rounding for ms.
import { describe, expect, it } from 'vitest';

import { formatBytes, formatValue } from '../../src-main/api/charts/theme';

describe('formatBytes', () => {
  it('says a small size in B or kB, never "0.0 MB"', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(4_123)).toBe('4.12 kB');
    expect(formatBytes(47_000)).toBe('47 kB');
    expect(formatBytes(999_960)).toBe('1 MB');
    expect(formatBytes(47_300_000)).toBe('47.3 MB');
    expect(formatBytes(1.5e9)).toBe('1.5 GB');
    expect(formatBytes(Number.NaN)).toBe('no data');
  });

  it('rounds ms the one way on a screen: 978.978 ms reads as 979 ms, as the chart says', () => {
    expect(formatValue(978.978, 'ms')).toBe('979 ms');
    expect(formatValue(12.345, 'ms')).toBe('12.3 ms');
  });
});
