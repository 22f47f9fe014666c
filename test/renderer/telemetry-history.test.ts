// The Dashboard's history (issue 27 item 7): a window returning to the Dashboard takes the main process's
// ring, which kept sampling while it was away, and says which periods that history was sampled at.
import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';

import type { TelemetrySample } from '../../src-main/api/telemetry';
import { useTelemetryStore } from '../../src-renderer/stores/telemetry';
import { samplingText, summarizeSampling } from '../../src-renderer/view-models/telemetry-sampling';
import { installFakeClient, ok } from './fake-client';

beforeEach(() => setActivePinia(createPinia()));

const host = { cpuPerCore: [10, 20], memUsedBytes: 1, memAvailableBytes: 1, memTotalBytes: 2, swapUsedBytes: 0, swapTotalBytes: 0, diskReadBytesPerSec: null, diskWriteBytesPerSec: null, engineHost: null };
const sample = (t: number, periodMs: number): TelemetrySample => ({ t, periodMs, gpus: [], host });
/** `n` samples `periodMs` apart, the last at `end`. */
const run = (end: number, n: number, periodMs: number) => Array.from({ length: n }, (_, i) => sample(end - (n - 1 - i) * periodMs, periodMs));
const gpu = { status: 'absent', message: 'no NVIDIA GPU found', restarts: 0 };

describe('telemetry store', () => {
  it("replaces what the window had with the main process's history on each start, keeping samples that came meanwhile", async () => {
    const now = 10_000_000;
    // 10 min in the background at 2 s, then 1 min of this window's 0.5 s.
    const history = [...run(now - 60_000, 300, 2000), ...run(now, 120, 500)];
    let answer = history.slice(0, 10);
    const fake = installFakeClient((m) => (m === 'telemetry.subscribe' ? ok({ leaseId: 'lease1', gpu, intervalMs: 500, backgroundIntervalMs: 2000, history: answer }) : ok({})));
    const store = useTelemetryStore();
    await store.start();
    expect(store.ready).toBe(true);
    expect(store.samples).toHaveLength(10);
    store.stop();
    expect(store.ready).toBe(false);
    // Back on the Dashboard: the ring's longer history wins over the ten samples this window kept.
    answer = history;
    const started = store.start();
    fake.emit('telemetry.sample', sample(now + 500, 500)); // arrives before the history does
    await started;
    expect(store.samples).toHaveLength(history.length + 1);
    expect(store.samples.at(-1)?.t).toBe(now + 500);
    expect(store.backgroundIntervalMs).toBe(2000);
    // A sample closer than the history's half-second floor updates the cards, not the history.
    fake.emit('telemetry.sample', sample(now + 700, 200));
    expect(store.latest?.t).toBe(now + 700);
    expect(store.samples).toHaveLength(history.length + 1);
    store.stop();
  });

  it('keeps at most an hour, as the main process does', async () => {
    const now = 50_000_000;
    const fake = installFakeClient((m) => (m === 'telemetry.subscribe' ? ok({ leaseId: 'l', gpu, intervalMs: 2000, backgroundIntervalMs: 2000, history: run(now, 1800, 2000) }) : ok({})));
    const store = useTelemetryStore();
    await store.start();
    for (let i = 1; i <= 600; i++) fake.emit('telemetry.sample', sample(now + i * 2000, 2000));
    store.stop();
    expect(store.samples.at(-1)!.t).toBe(now + 600 * 2000);
    expect(store.samples.at(-1)!.t - store.samples[0].t).toBeLessThanOrEqual(3600_000);
    expect(store.samples.length).toBeLessThanOrEqual(1801);
  });
});

describe('sampling summary', () => {
  it('names each period with its share of the range, the background one as such, and where the history starts', () => {
    const now = 10_000_000;
    const samples = [...run(now - 180_000, 360, 2000), ...run(now, 360, 500)];
    const fifteen = summarizeSampling(samples, now - 900_000, 2000);
    expect(fifteen.parts.map((p) => [p.periodMs, Math.round(p.seconds / 60), p.background])).toEqual([
      [2000, 12, true],
      [500, 3, false],
    ]);
    expect(fifteen.startsAt).toBeNull();
    expect(samplingText(fifteen)).toBe('History sampled every 2 s (in the background, while no window showed the Dashboard) for 12 min, every 0.5 s for 3 min.');
    // The hour reaches further back than the history: say where it starts.
    const hour = summarizeSampling(samples, now - 3600_000, 2000);
    expect(hour.startsAt).toBe(samples[0].t);
    expect(samplingText(hour)).toMatch(/for 3 min; the history starts at \d\d:\d\d\.$/);
    // One period over the whole range needs no durations; a run's 200 ms samples show as the history's 0.5 s.
    expect(samplingText(summarizeSampling(run(now, 100, 500), now - 40_000, 2000))).toBe('History sampled every 0.5 s.');
    expect(summarizeSampling(run(now, 100, 200), now - 10_000, 2000).parts[0].periodMs).toBe(500);
    // A stretch with no samples (the workbench stopped) counts for no period.
    const stopped = [...run(now - 600_000, 30, 2000), ...run(now, 30, 2000)];
    expect(Math.round(summarizeSampling(stopped, now - 900_000, 2000).parts[0].seconds)).toBe(116);
    expect(samplingText(summarizeSampling([], now - 60_000, 2000))).toBe('No history yet: samples arrive as they are taken.');
    // A window's period that has only just begun is not listed "for 0 s".
    const justOpened = summarizeSampling([...run(now - 500, 10, 2000), sample(now, 500)], now - 300_000, 2000);
    expect(justOpened.parts.map((p) => p.periodMs)).toEqual([2000]);
  });
});
