import type { GpuState, TelemetrySample } from '@api/telemetry';
import { defineStore } from 'pinia';
import { computed, ref, shallowRef, triggerRef } from 'vue';

import { useApiClient } from '../transport/client-instance';

/** Renderer-side history: one hour at 2 Hz, like the main process keeps. */
const CAPACITY = 7200;
const RENEW_MS = 5000;

/** Live GPU and host telemetry for the Dashboard. */
export const useTelemetryStore = defineStore('telemetry', () => {
  /** Samples, oldest first (a shallowRef: charts read it, nothing deep-watches it). */
  const samples = shallowRef<TelemetrySample[]>([]);
  /** nvidia-smi's state: ok, absent ("no NVIDIA GPU found"), error, restarting. */
  const gpu = ref<GpuState>({ status: 'starting', message: null, restarts: 0 });
  /** Charts stop moving while paused; samples keep arriving. */
  const paused = ref(false);
  /** Visible time window of the charts, seconds. */
  const windowSeconds = ref(300);
  const intervalMs = ref(500);
  const latest = computed(() => samples.value.at(-1) ?? null);

  const listeners = new Set<(s: TelemetrySample) => void>();
  let leaseId: string | undefined;
  let renew: ReturnType<typeof setInterval> | null = null;
  let offSample: (() => void) | null = null;
  let offGpu: (() => void) | null = null;

  async function subscribe(historySeconds: number): Promise<void> {
    const r = await useApiClient().call('telemetry.subscribe', { intervalMs: intervalMs.value, historySeconds, leaseId });
    leaseId = r.leaseId;
    gpu.value = r.gpu;
    // History fills an empty view once; afterwards samples arrive as events.
    if (r.history.length && samples.value.length === 0) samples.value = r.history.slice(-CAPACITY);
  }

  /** Starts the lease (renewed every 5 s) and the sample stream. */
  async function start(): Promise<void> {
    if (renew) return;
    const client = useApiClient();
    offSample = client.on('telemetry.sample', (s) => {
      const arr = samples.value;
      arr.push(s);
      if (arr.length > CAPACITY) arr.splice(0, arr.length - CAPACITY);
      triggerRef(samples);
      for (const l of listeners) l(s);
    });
    offGpu = client.on('telemetry.gpu', (state) => (gpu.value = state));
    renew = setInterval(() => void subscribe(0).catch(() => undefined), RENEW_MS);
    await subscribe(3600).catch(() => undefined);
  }

  function stop(): void {
    if (renew) clearInterval(renew);
    renew = null;
    offSample?.();
    offGpu?.();
    if (leaseId) void useApiClient().call('telemetry.unsubscribe', { leaseId }).catch(() => undefined);
    leaseId = undefined;
  }

  /** For charts that append each new sample instead of re-rendering everything. */
  function onSample(listener: (s: TelemetrySample) => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  return { samples, gpu, paused, windowSeconds, intervalMs, latest, start, stop, onSample };
});
