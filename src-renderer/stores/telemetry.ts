import { type GpuState, HISTORY_CAPACITY, HISTORY_SECONDS, historyKeeps, type TelemetrySample } from '@api/telemetry';
import { defineStore } from 'pinia';
import { ref, shallowRef, triggerRef } from 'vue';

import { useApiClient } from '../transport/client-instance';

const RENEW_MS = 5000;

/** Live GPU and host telemetry for the Dashboard. */
export const useTelemetryStore = defineStore('telemetry', () => {
  /**
   * The history, oldest first, kept as the main process keeps it (an hour, about two a second at most);
   * a shallowRef: charts read it, nothing deep-watches it.
   */
  const samples = shallowRef<TelemetrySample[]>([]);
  /** The newest sample, whether or not the history kept it (the cards show it). */
  const latest = shallowRef<TelemetrySample | null>(null);
  /** nvidia-smi's state: ok, absent ("no NVIDIA GPU found"), error, restarting. */
  const gpu = ref<GpuState>({ status: 'starting', message: null, restarts: 0 });
  /** Charts stop moving while paused; samples keep arriving. */
  const paused = ref(false);
  /** Visible time window of the charts, seconds. */
  const windowSeconds = ref(300);
  /** The period this window asks for while it shows the Dashboard. */
  const intervalMs = ref(500);
  /** The period the workbench samples at while no window watches; null where it does not (an older server). */
  const backgroundIntervalMs = ref<number | null>(null);
  /** False from start() until the main process's history has replaced what this window had: charts wait for it. */
  const ready = ref(false);

  const listeners = new Set<(s: TelemetrySample) => void>();
  let leaseId: string | undefined;
  let renew: ReturnType<typeof setInterval> | null = null;
  let offSample: (() => void) | null = null;
  let offGpu: (() => void) | null = null;
  /** Samples that arrived while the history was on its way. */
  let pending: TelemetrySample[] = [];

  function add(s: TelemetrySample): void {
    latest.value = s;
    const arr = samples.value;
    if (!historyKeeps(arr.at(-1)?.t, s.t)) return;
    arr.push(s);
    const old = arr.findIndex((x) => x.t >= s.t - HISTORY_SECONDS * 1000);
    const drop = Math.max(old, arr.length - HISTORY_CAPACITY);
    if (drop > 0) arr.splice(0, drop);
    triggerRef(samples);
    for (const l of listeners) l(s);
  }

  async function subscribe(historySeconds: number) {
    const r = await useApiClient().call('telemetry.subscribe', { intervalMs: intervalMs.value, historySeconds, leaseId });
    leaseId = r.leaseId;
    gpu.value = r.gpu;
    backgroundIntervalMs.value = r.backgroundIntervalMs;
    return r;
  }

  /**
   * Starts the lease (renewed every 5 s) and the sample stream. The main process's ring is the history:
   * it replaces what this window had, since the main process kept sampling while the Dashboard was away.
   */
  async function start(): Promise<void> {
    if (renew) return;
    ready.value = false;
    pending = [];
    const client = useApiClient();
    offSample = client.on('telemetry.sample', (s) => (ready.value ? add(s) : pending.push(s)));
    offGpu = client.on('telemetry.gpu', (state) => (gpu.value = state));
    renew = setInterval(() => void subscribe(0).catch(() => undefined), RENEW_MS);
    let history: TelemetrySample[] = samples.value;
    try {
      history = (await subscribe(HISTORY_SECONDS)).history;
    } catch {
      // Not answered: keep what this window had; live samples follow.
    }
    samples.value = [];
    const newest = history.at(-1)?.t ?? -Infinity;
    for (const s of [...history, ...pending.filter((p) => p.t > newest)]) add(s);
    pending = [];
    ready.value = true;
  }

  function stop(): void {
    if (renew) clearInterval(renew);
    renew = null;
    offSample?.();
    offGpu?.();
    ready.value = false;
    if (leaseId) void useApiClient().call('telemetry.unsubscribe', { leaseId }).catch(() => undefined);
    leaseId = undefined;
  }

  /** For charts that append each new sample instead of re-rendering everything. */
  function onSample(listener: (s: TelemetrySample) => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  return { samples, gpu, paused, windowSeconds, intervalMs, backgroundIntervalMs, latest, ready, start, stop, onSample };
});
