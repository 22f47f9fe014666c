import { describe, expect, it } from 'vitest';

import { buildTrace, MAX_WINDOWS, WindowBuilder } from '../../src-main/core/reports/trace';

/** A long run's step events: one every 4 steps, phases varying along the run. */
function events(count: number) {
  return Array.from({ length: count }, (_, i) => ({
    globalStep: 4 * (i + 1),
    samplesPerSec: 10_000 + (i % 7) * 100,
    phasesMs: { data: 0.1 + (i % 3) * 0.01, h2d: 0, forward: 1 + (i % 5) * 0.1, loss: 0.01, backward: 2, optimizer: 0.5 },
  }));
}

describe('the trace of a long run', () => {
  it('keeps memory bounded by merging windows, preserving every step and every millisecond', () => {
    const all = events(60_000);
    const builder = new WindowBuilder(8, 64);
    for (const e of all) builder.add(e);
    expect(builder.windows.length).toBeLessThanOrEqual(2 * MAX_WINDOWS);
    const steps = builder.windows.reduce((s, w) => s + w.steps, 0);
    expect(steps).toBe(4 * 60_000 - 8);
    // The step-weighted totals are those of the measured events (the first two are warm-up).
    const measured = all.slice(2);
    const forward = measured.reduce((s, e) => s + e.phasesMs.forward * 4, 0);
    expect(builder.windows.reduce((s, w) => s + w.phasesMs.forward * w.steps, 0)).toBeCloseTo(forward, 3);
    const wall = measured.reduce((s, e) => s + (1000 * 64 * 4) / e.samplesPerSec, 0);
    expect(builder.windows.reduce((s, w) => s + w.wallMs * w.steps, 0)).toBeCloseTo(wall, 3);
  });

  it('draws one slice per window past 20,000 steps, still adding up to the measured total', () => {
    const builder = new WindowBuilder(0, 64);
    for (const e of events(30_000)) builder.add(e);
    const measuredMs = builder.windows.reduce((s, w) => s + w.wallMs * w.steps, 0) * 1.02;
    const trace = buildTrace('long-run', 'train', [{ index: 1, windows: builder.windows, measuredMs }], null);
    const slices = trace.traceEvents.filter((e) => e.ph === 'X');
    expect(slices.length).toBe(8 * builder.windows.length);
    expect(trace.metadata.granularity).toMatch(/one slice per event window/);
    const phaseUs = slices.filter((e) => e.cat === 'phase').reduce((s, e) => s + (e.dur ?? 0), 0);
    expect(Math.abs(phaseUs / 1000 - measuredMs) / measuredMs).toBeLessThan(1e-6);
  });
});
