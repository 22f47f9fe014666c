import { randomBytes } from 'node:crypto';
import type { Writable } from 'node:stream';

import { type GpuSample, HISTORY_CAPACITY, HISTORY_SECONDS, historyKeeps, type TelemetrySample, type TelemetrySnapshot, type TelemetrySummary } from '../../api/telemetry';
import type { EventHub } from '../common/event-hub';
import { type ConditionsTarget, watchConditions } from './conditions';
import { GpuSampler } from './gpu-sampler';
import { HostSampler } from './host-sampler';
import { Ring } from './ring';
import { summarize } from './summary';

const DEFAULT_LEASE_MS = 15_000;
/** The background lease's period (ADR 0033): slow enough to cost little, fast enough for an hour's chart. */
export const BACKGROUND_INTERVAL_MS = 2000;
const BACKGROUND_LEASE = 'background';

interface Lease {
  intervalMs: number;
  /** null: held until released (runs); a time: renewed by the renderer, dropped when it stops asking. */
  expires: number | null;
}

export interface TelemetryOptions {
  gpu?: GpuSampler;
  host?: HostSampler;
  enginePid?: () => number | null;
}

/**
 * Samples the GPUs and the host while someone listens (renderer subscriptions
 * are leases it renews; runs hold one while they record; the app and serve keep
 * a slow background lease), keeps an hour of history in a ring bounded by time
 * and count, and publishes every sample as a telemetry.sample event.
 */
export class TelemetryService {
  readonly gpu: GpuSampler;
  private readonly host: HostSampler;
  private readonly enginePid: () => number | null;
  private readonly history = new Ring<TelemetrySample>(HISTORY_CAPACITY);
  private readonly leases = new Map<string, Lease>();
  private readonly latestGpu = new Map<number, { sample: GpuSample; at: number }>();
  private readonly listeners = new Set<(s: TelemetrySample) => void>();
  private timer: NodeJS.Timeout | null = null;
  private intervalMs = 0;

  constructor(private readonly events: EventHub, options: TelemetryOptions = {}) {
    this.gpu = options.gpu ?? new GpuSampler();
    this.host = options.host ?? new HostSampler();
    this.enginePid = options.enginePid ?? (() => null);
    this.gpu.on('sample', (s) => this.latestGpu.set(s.index, { sample: s, at: Date.now() }));
    this.gpu.on('state', (state) => this.events.emit('telemetry.gpu', state));
  }

  /** Starts or renews a lease at `intervalMs` and returns the recent history. */
  subscribe(intervalMs: number, historySeconds: number, leaseId?: string): TelemetrySnapshot & { leaseId: string } {
    const id = leaseId ?? randomBytes(6).toString('hex');
    this.leases.set(id, { intervalMs, expires: Date.now() + DEFAULT_LEASE_MS });
    this.reschedule();
    const since = Date.now() - historySeconds * 1000;
    return {
      leaseId: id,
      gpu: this.gpu.state(),
      intervalMs: this.intervalMs,
      backgroundIntervalMs: this.leases.get(BACKGROUND_LEASE)?.intervalMs ?? null,
      history: this.history.since((s) => s.t >= since),
    };
  }

  /**
   * Keeps sampling at a slow period while nobody else listens, so any window opening the Dashboard
   * finds the last hour in the ring. The app and serve call it; the CLI's commands never do.
   */
  keepHistory(intervalMs = BACKGROUND_INTERVAL_MS): void {
    this.leases.set(BACKGROUND_LEASE, { intervalMs, expires: null });
    this.reschedule();
  }

  /** The period samples are taken at now (ms), 0 when nothing is sampled; and the background lease's, null without one. */
  sampling(): { intervalMs: number; backgroundIntervalMs: number | null; historySize: number } {
    this.reschedule(); // drops lapsed leases first
    return { intervalMs: this.intervalMs, backgroundIntervalMs: this.leases.get(BACKGROUND_LEASE)?.intervalMs ?? null, historySize: this.history.size };
  }

  unsubscribe(leaseId: string): void {
    this.leases.delete(leaseId);
    this.reschedule();
  }

  /**
   * Keeps the samplers running at `intervalMs` until release(), after one reading: a benchmark
   * holds them across its repetitions so their start-up (spawning nvidia-smi, the first host
   * reading) is paid before the first measured step, not inside it (it slowed the first
   * repetition's measured steps by 20-40% on 2 cores).
   */
  async hold(intervalMs: number): Promise<{ release(): void }> {
    const id = `hold-${randomBytes(6).toString('hex')}`;
    this.leases.set(id, { intervalMs, expires: null });
    this.reschedule();
    // Only to pay the first reading's cost now: a failed one must not stop the benchmark (the
    // periodic samples report the machine as they can).
    await this.snapshot().catch(() => undefined);
    return {
      release: () => {
        this.leases.delete(id);
        this.reschedule();
      },
    };
  }

  /**
   * Records samples into `out` (JSON lines; a run's file, RunRecord.stream) until stop(),
   * which ends it and returns the summary the run's result carries. With `watch` (a measured
   * window: a benchmark's repetition), the summary also says what else the machine did meanwhile.
   */
  record(out: Writable, intervalMs = 500, watch?: ConditionsTarget | 'engine'): { stop(until?: number): Promise<TelemetrySummary> } {
    const id = `record-${randomBytes(6).toString('hex')}`;
    const samples: TelemetrySample[] = [];
    const enginePid = this.enginePid();
    const target = watch === 'engine' ? (enginePid ? { pid: enginePid } : null) : (watch ?? null);
    const ownPids = () => [this.enginePid(), this.gpu.childPid()].filter((p): p is number => p !== null);
    const conditions = target ? watchConditions(target, { nvidiaSmi: this.gpu.liveCommand(), ownPids }) : null;
    const listener = (s: TelemetrySample) => {
      samples.push(s);
      out.write(JSON.stringify(s) + '\n');
    };
    this.listeners.add(listener);
    this.leases.set(id, { intervalMs, expires: null });
    this.reschedule();
    return {
      // `until` (ms since the epoch): the window ended then, though the work went on (the file keeps every sample).
      stop: async (until?: number) => {
        // A run shorter than one period still reports what the machine looked like.
        if (samples.length === 0) listener(await this.snapshot());
        this.listeners.delete(listener);
        this.leases.delete(id);
        this.reschedule();
        await new Promise<void>((resolve) => out.end(resolve));
        const inWindow = until === undefined ? samples : samples.filter((s) => s.t <= until);
        const kept = inWindow.length ? inWindow : samples.slice(0, 1);
        const summary = summarize(kept, this.gpu.state().message ?? this.gpu.state().status);
        return conditions ? { ...summary, conditions: await conditions.finish(kept) } : summary;
      },
    };
  }

  async dispose(): Promise<void> {
    this.leases.clear();
    this.reschedule();
    await this.gpu.stop();
  }

  private reschedule(): void {
    const now = Date.now();
    for (const [id, lease] of this.leases) if (lease.expires !== null && lease.expires < now) this.leases.delete(id);
    const wanted = this.leases.size ? Math.min(...[...this.leases.values()].map((l) => l.intervalMs)) : 0;
    if (wanted === this.intervalMs) return;
    this.intervalMs = wanted;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (wanted === 0) {
      void this.gpu.stop(); // nobody listens
      return;
    }
    this.gpu.start(wanted);
    // The first sample at once: a short run still gets one, and a new view is not empty.
    this.tick(0);
  }

  private tick(delay = this.intervalMs): void {
    const interval = this.intervalMs;
    this.timer = setTimeout(() => {
      void this.sample().finally(() => {
        if (this.intervalMs === interval && this.timer) this.tick();
      });
    }, delay);
    this.timer.unref?.();
  }

  private async snapshot(): Promise<TelemetrySample> {
    const now = Date.now();
    const host = await this.host.sample(this.enginePid());
    // A GPU reading older than three periods (or 2 s) is stale: the sampler is restarting.
    const fresh = Math.max(3 * this.intervalMs, 2000);
    const gpus = [...this.latestGpu.values()].filter((g) => now - g.at <= fresh).map((g) => g.sample).sort((a, b) => a.index - b.index);
    return this.intervalMs ? { t: now, periodMs: this.intervalMs, gpus, host } : { t: now, gpus, host };
  }

  private async sample(): Promise<void> {
    const sample = await this.snapshot();
    if (historyKeeps(this.history.newest()?.t, sample.t)) {
      this.history.push(sample);
      this.history.dropOldestWhile((s) => s.t < sample.t - HISTORY_SECONDS * 1000);
    }
    this.events.emit('telemetry.sample', sample);
    for (const l of this.listeners) l(sample);
    this.reschedule(); // drops expired leases
  }
}
