import { describe, expect, it } from 'vitest';

import { colourFor, formatValue, PALETTE, tickStep, timeAxis, timeLabel, visibleSpan, withGaps } from '../../src-main/api/charts/theme';

describe('chart theme', () => {
  it('rounds values to what a person reads, with the unit, and names a gap', () => {
    expect(formatValue(73.456789, '%')).toBe('73.5 %');
    expect(formatValue(1234.5678, 'MHz')).toBe('1,235 MHz');
    expect(formatValue(2.004567, 'ms')).toBe('2 ms');
    expect(formatValue(0.123456, 'GiB')).toBe('0.123 GiB');
    expect(formatValue(21.6, 'GiB')).toBe('21.6 GiB');
    expect(formatValue(null, 'W')).toBe('no data');
    expect(formatValue(undefined, 'W')).toBe('no data');
  });

  it('keeps at most six time labels across every telemetry window, with seconds only when ticks are seconds apart', () => {
    for (const seconds of [10, 60, 300, 900, 3600]) {
      const step = tickStep(seconds * 1000);
      expect(seconds * 1000 / step, `${seconds} s window`).toBeLessThanOrEqual(6);
      expect(seconds * 1000 / step, `${seconds} s window`).toBeGreaterThanOrEqual(2);
    }
    const t = new Date(2026, 10, 23, 12, 8, 45).getTime();
    expect(timeLabel(t, tickStep(60_000))).toBe('12:08:45');
    expect(timeLabel(t, tickStep(3_600_000))).toBe('12:08');
    const axis = timeAxis(60_000);
    expect(axis.minInterval).toBe(10_000);
    expect(axis.axisLabel.formatter(t)).toBe('12:08:45');
  });

  it('breaks the line where samples stopped instead of bridging the missing time', () => {
    const points: [number, number | null][] = [[0, 1], [500, 2], [1000, 3], [9000, 4], [9500, null], [10_000, 6]];
    expect(withGaps(points, 1500)).toEqual([[0, 1], [500, 2], [1000, 3], [1001, null], [9000, 4], [9500, null], [10_000, 6]]);
    expect(withGaps([], 1500)).toEqual([]);
  });

  it('fills the chart with a young history instead of pinning it to the right edge of the window', () => {
    const now = 1_000_000;
    // Two minutes of samples in a five-minute window: the span starts at the first sample.
    expect(visibleSpan(now, 300_000, now - 120_000)).toEqual({ min: now - 120_000, max: now });
    // A full hour of history in a five-minute window: the window decides.
    expect(visibleSpan(now, 300_000, now - 3_600_000)).toEqual({ min: now - 300_000, max: now });
    // One sample: a few seconds stay visible.
    expect(visibleSpan(now, 300_000, now)).toEqual({ min: now - 10_000, max: now });
  });

  it('gives GPU i the same colour in every chart', () => {
    expect(colourFor(0)).toBe(PALETTE[0]);
    expect(colourFor(PALETTE.length + 1)).toBe(PALETTE[1]);
    expect(new Set(PALETTE).size).toBe(PALETTE.length);
  });
});
