import { chmodSync, copyFileSync, createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, describe, expect, it, vi } from 'vitest';

import { type GpuState, HISTORY_CAPACITY, HISTORY_SECONDS, type HostSample, type TelemetrySample } from '../../src-main/api/telemetry';
import { EventHub } from '../../src-main/core/common/event-hub';
import { createServices } from '../../src-main/core/services';
import { GpuSampler } from '../../src-main/core/telemetry/gpu-sampler';
import type { HostSampler } from '../../src-main/core/telemetry/host-sampler';
import { Ring } from '../../src-main/core/telemetry/ring';
import { summarize } from '../../src-main/core/telemetry/summary';
import { BACKGROUND_INTERVAL_MS, TelemetryService } from '../../src-main/core/telemetry/telemetry-service';
import { fakeNvidiaSmi } from '../helpers/fake-nvidia-smi';
import { tempDir } from '../helpers/temp-dir';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function waitFor<T>(get: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = get();
    if (v) return v;
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const pidsOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map(Number) : []);

describe('history ring', () => {
  it('stays bounded with a million samples and keeps the newest', () => {
    const ring = new Ring<number>(HISTORY_CAPACITY);
    for (let i = 0; i < 1_000_000; i++) ring.push(i);
    expect(ring.size).toBe(HISTORY_CAPACITY);
    const all = ring.toArray();
    expect(all).toHaveLength(HISTORY_CAPACITY);
    expect(all[0]).toBe(1_000_000 - HISTORY_CAPACITY);
    expect(all.at(-1)).toBe(999_999);
    expect(ring.since((v) => v >= 999_990)).toEqual([999_990, 999_991, 999_992, 999_993, 999_994, 999_995, 999_996, 999_997, 999_998, 999_999]);
  });
});

describe('GPU sampler against a fake nvidia-smi', () => {
  it('delivers samples, restarts with back-off when it dies, and leaves no process behind', async () => {
    const fake = fakeNvidiaSmi('multi-gpu.txt', { periods: 3, exitCode: 3 });
    cleanups.push(fake.cleanup);
    const sampler = new GpuSampler({ command: fake.command, restartDelaysMs: [100, 200] });
    const samples: number[] = [];
    const states: GpuState[] = [];
    sampler.on('sample', (s) => samples.push(s.index));
    sampler.on('state', (s) => states.push(s));
    sampler.start(50);
    await waitFor(() => sampler.state().restarts >= 2);
    expect(samples.slice(0, 4)).toEqual([0, 1, 2, 3]);
    const restarting = states.find((s) => s.status === 'restarting');
    expect(restarting?.message).toMatch(/nvidia-smi exited with code 3 after [\d.]+ s; restarting in 0\.1 s/);
    expect(states.filter((s) => s.status === 'restarting').map((s) => s.message?.match(/in ([\d.]+) s/)?.[1])).toContain('0.2');
    await sampler.stop();
    expect(sampler.state().status).toBe('stopped');
    const pids = pidsOf(fake.pids);
    expect(pids.length).toBeGreaterThanOrEqual(2); // the newest may be stopped before it starts
    expect(pids.filter(alive)).toEqual([]);
    expect(readFileSync(fake.log, 'utf8')).toContain('-lms 50');
  });

  it('says plainly when there is no nvidia-smi, without throwing', async () => {
    const sampler = new GpuSampler({ command: '/nonexistent/nvidia-smi' });
    sampler.start(500);
    await waitFor(() => sampler.state().status === 'absent');
    expect(sampler.state().message).toBe('no NVIDIA GPU found: /nonexistent/nvidia-smi is not installed or not on PATH');
    await sampler.stop();
    expect(sampler.state().status).toBe('absent');
  });

  it('runs nvidia-smi.exe from %SystemRoot%\\System32 when PATH lacks it (Windows DCH drivers)', async () => {
    const fake = fakeNvidiaSmi('one-gpu.txt');
    cleanups.push(fake.cleanup);
    const system32 = path.join(fake.dir, 'Windows', 'System32');
    mkdirSync(system32, { recursive: true });
    copyFileSync(fake.command, path.join(system32, 'nvidia-smi.exe'));
    chmodSync(path.join(system32, 'nvidia-smi.exe'), 0o755);
    const sampler = new GpuSampler({ env: { Path: path.join(fake.dir, 'bin'), SystemRoot: path.join(fake.dir, 'Windows') }, platform: 'win32' });
    const samples: (string | null)[] = [];
    sampler.on('sample', (s) => samples.push(s.name));
    sampler.start(50);
    await waitFor(() => samples.length > 0);
    expect(samples[0]).toBe('NVIDIA H100 80GB HBM3');
    await sampler.stop();
  });

  it('names the places it looked in when nvidia-smi is nowhere, without starting anything', async () => {
    const t = tempDir('no-smi-');
    cleanups.push(t.cleanup);
    const env = { PATH: path.join(t.dir, 'bin'), SystemRoot: path.join(t.dir, 'Windows'), ProgramFiles: path.join(t.dir, 'PF') };
    const sampler = new GpuSampler({ env, platform: 'win32' });
    const states: GpuState[] = [];
    sampler.on('state', (s) => states.push(s));
    sampler.start(500);
    expect(sampler.state().status).toBe('absent');
    expect(sampler.state().message).toContain(`nor at ${path.join(t.dir, 'Windows', 'System32', 'nvidia-smi.exe')}`);
    expect(sampler.state().message).toContain(`nor at ${path.join(t.dir, 'PF', 'NVIDIA Corporation', 'NVSMI', 'nvidia-smi.exe')}`);
    expect(states.map((s) => s.status)).toEqual(['absent']);
    sampler.start(500); // asked again: still absent, nothing spawned
    await sampler.stop();
    expect(sampler.state().status).toBe('absent');
  });

  it("shows the driver's own error line", async () => {
    const fake = fakeNvidiaSmi('driver-error.txt', { periods: 1, exitCode: 9 });
    cleanups.push(fake.cleanup);
    const sampler = new GpuSampler({ command: fake.command, restartDelaysMs: [60_000] });
    const messages: (string | null)[] = [];
    sampler.on('state', (s) => messages.push(s.message));
    sampler.start(100);
    await waitFor(() => sampler.state().status === 'restarting');
    expect(messages).toContain("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.");
    expect(sampler.state().message).toMatch(/exited with code 9 .*NVIDIA-SMI has failed/);
    await sampler.stop();
  });
});

/** A telemetry service over a fake one-GPU nvidia-smi, and the samples it publishes. */
function serviceWithOneGpu() {
  const fake = fakeNvidiaSmi('one-gpu.txt');
  cleanups.push(fake.cleanup);
  const hub = new EventHub();
  const service = new TelemetryService(hub, { gpu: new GpuSampler({ command: fake.command }) });
  cleanups.push(() => service.dispose());
  const seen: TelemetrySample[] = [];
  hub.subscribe((name, data) => name === 'telemetry.sample' && seen.push(data as TelemetrySample));
  return { fake, service, seen };
}

describe('telemetry service', () => {
  it('samples while leased, publishes events, records runs with a summary, and stops when nobody listens', async () => {
    const { fake, service, seen } = serviceWithOneGpu();
    const file = `${fake.dir}/telemetry.jsonl`;
    const recording = service.record(createWriteStream(file, { flags: 'a' }), 100);
    await waitFor(() => seen.filter((s) => s.gpus.length).length >= 4);
    const summary = await recording.stop();
    expect(summary.samples).toBeGreaterThanOrEqual(4);
    expect(summary.gpu).toBe('NVIDIA H100 80GB HBM3');
    expect(summary.gpuMemoryPeakMiB).toBe(61240);
    expect(summary.gpuUtilizationMean).toBeGreaterThan(10);
    expect(summary.gpuUtilizationP95).toBeLessThanOrEqual(98);
    expect(readFileSync(file, 'utf8').trim().split('\n').length).toBe(summary.samples);
    expect(seen[0].host.cpuPerCore.length).toBeGreaterThan(0);
    // The only lease is gone: sampling stops and nvidia-smi is stopped.
    const count = seen.length;
    await new Promise((r) => setTimeout(r, 400));
    expect(seen.length).toBeLessThanOrEqual(count + 1);
    await waitFor(() => pidsOf(fake.pids).every((p) => !alive(p)));
    // The history kept the run's samples, thinned to about two a second (the run's file has them all).
    const history = service.subscribe(500, 60).history;
    expect(history.length).toBeGreaterThanOrEqual(1);
    expect(history.every((h) => seen.some((s) => s.t === h.t))).toBe(true);
    expect(history.slice(1).every((h, i) => h.t - history[i].t >= 450)).toBe(true);
  });

  it('holds the samplers across recordings, started before the first one, until released', async () => {
    const { fake, service, seen } = serviceWithOneGpu();
    const held = await service.hold(100);
    // nvidia-smi is running before any recording starts, and keeps running between recordings.
    await waitFor(() => pidsOf(fake.pids).some((p) => alive(p)));
    const first = service.record(createWriteStream(`${fake.dir}/rep1.jsonl`, { flags: 'a' }), 100);
    await waitFor(() => seen.filter((s) => s.gpus.length).length >= 2);
    await first.stop();
    const running = pidsOf(fake.pids).filter((p) => alive(p));
    expect(running.length).toBeGreaterThan(0);
    const count = seen.length;
    await waitFor(() => seen.length >= count + 2);
    expect(pidsOf(fake.pids).filter((p) => alive(p))).toEqual(running);
    // Released: nobody listens, so sampling and nvidia-smi stop.
    held.release();
    await waitFor(() => pidsOf(fake.pids).every((p) => !alive(p)));
    const after = seen.length;
    await new Promise((r) => setTimeout(r, 400));
    expect(seen.length).toBeLessThanOrEqual(after + 1);
  });

  it('keeps sampling on a background lease with no window, and a window raises the rate and lowers it back', async () => {
    const { service, seen } = serviceWithOneGpu();
    service.keepHistory(600);
    await waitFor(() => seen.filter((s) => s.gpus.length).length >= 3);
    expect(service.sampling()).toMatchObject({ intervalMs: 600, backgroundIntervalMs: 600 });
    expect(seen.every((s) => s.periodMs === 600)).toBe(true);
    // A window's lease raises the rate while it lasts...
    const { leaseId, history, backgroundIntervalMs } = service.subscribe(100, 60);
    expect(backgroundIntervalMs).toBe(600);
    expect(history.length).toBeGreaterThanOrEqual(3); // what was sampled before any window came
    expect(service.sampling().intervalMs).toBe(100);
    const before = seen.length;
    await waitFor(() => seen.slice(before).filter((s) => s.periodMs === 100).length >= 5);
    // ...and its end lowers it back to the background's, which keeps going.
    service.unsubscribe(leaseId);
    expect(service.sampling().intervalMs).toBe(600);
    const after = seen.length;
    await waitFor(() => seen.length >= after + 2);
    expect(seen.slice(after + 1).every((s) => s.periodMs === 600)).toBe(true);
  });

  it('summarises samples without GPUs honestly', () => {
    const host = { cpuPerCore: [50, 100], memUsedBytes: 0, memAvailableBytes: 0, memTotalBytes: 0, swapUsedBytes: 0, swapTotalBytes: 0, diskReadBytesPerSec: null, diskWriteBytesPerSec: null, engineHost: null };
    expect(summarize([{ t: 1, gpus: [], host }], 'no NVIDIA GPU found')).toEqual({
      samples: 1, gpuUtilizationMean: null, gpuUtilizationP95: null, gpuMemoryPeakMiB: null, gpuPowerMeanW: null, gpuEnergyJ: null, gpuEnergySeconds: null, cpuMean: 75, gpu: 'no NVIDIA GPU found',
    });
  });
});

describe('telemetry history bounds', () => {
  afterEach(() => vi.useRealTimers());
  const host: HostSample = { cpuPerCore: [1, 2], memUsedBytes: 1, memAvailableBytes: 1, memTotalBytes: 2, swapUsedBytes: 0, swapTotalBytes: 0, diskReadBytesPerSec: null, diskWriteBytesPerSec: null, engineHost: null };

  it('holds the last hour and no more, by time and by count, over hours of background and fast samples', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    const service = new TelemetryService(new EventHub(), {
      gpu: new GpuSampler({ command: '/nonexistent/nvidia-smi' }),
      host: { sample: () => Promise.resolve(host) } as unknown as HostSampler,
    });
    cleanups.push(() => service.dispose());
    // Three hours at the background's 2 s: the time bound keeps one hour of it.
    service.keepHistory();
    await vi.advanceTimersByTimeAsync(3 * 3600_000);
    let history = service.subscribe(BACKGROUND_INTERVAL_MS, HISTORY_SECONDS).history;
    service.unsubscribe(service.subscribe(BACKGROUND_INTERVAL_MS, 0).leaseId);
    const span = (h: TelemetrySample[]) => (h.at(-1)!.t - h[0].t) / 1000;
    expect(span(history)).toBeGreaterThanOrEqual(HISTORY_SECONDS - 2);
    expect(span(history)).toBeLessThanOrEqual(HISTORY_SECONDS);
    expect(history.length).toBeLessThanOrEqual(HISTORY_SECONDS / 2 + 1);
    // Two hours at 100 ms (72,000 samples, a run's fast lease): the count bound holds, and still covers the hour.
    const fast = await service.hold(100);
    await vi.advanceTimersByTimeAsync(2 * 3600_000);
    fast.release();
    expect(service.sampling().historySize).toBeLessThanOrEqual(HISTORY_CAPACITY);
    history = service.subscribe(BACKGROUND_INTERVAL_MS, HISTORY_SECONDS).history;
    expect(span(history)).toBeGreaterThanOrEqual(HISTORY_SECONDS - 1);
    expect(history.every((s) => s.periodMs === 100)).toBe(true);
    const gaps = history.slice(1).map((s, i) => s.t - history[i].t);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(450);
  });
});

describe('background sampling by shell', () => {
  it('the CLI path (createServices without keepTelemetryHistory) samples nothing; the app and serve keep a 2 s lease', async () => {
    const dirs = [tempDir(), tempDir()];
    cleanups.push(...dirs.map((d) => d.cleanup));
    const cli = await createServices({ workspaceDir: dirs[0].dir });
    cleanups.push(() => cli.dispose());
    const serve = await createServices({ workspaceDir: dirs[1].dir, keepTelemetryHistory: true });
    cleanups.push(() => serve.dispose());
    await new Promise((r) => setTimeout(r, 300));
    expect(cli.telemetry.sampling()).toEqual({ intervalMs: 0, backgroundIntervalMs: null, historySize: 0 });
    expect(serve.telemetry.sampling()).toMatchObject({ intervalMs: BACKGROUND_INTERVAL_MS, backgroundIntervalMs: BACKGROUND_INTERVAL_MS });
    await waitFor(() => serve.telemetry.sampling().historySize >= 1);
  });
});
