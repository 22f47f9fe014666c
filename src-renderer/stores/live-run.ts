import { runIdAt } from '@api/ids';
import type { GpuState } from '@api/telemetry';
import type { TrainPreparingEvent, TrainRequest, TrainResult, TrainStepEvent } from '@api/training';
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';

import { errorText } from './error-text';
import { useApiClient } from '../transport/client-instance';

/** n random bytes as hex, from the browser's crypto. */
function randomHex(n: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** How often the run's telemetry lease is renewed (the telemetry store's pace). */
const LEASE_RENEW_MS = 5000;

/** One telemetry sample of the run's GPU, for its timeline. */
export interface RunGpuPoint {
  t: number;
  utilization: number | null;
  memoryMiB: number | null;
  powerW: number | null;
}

/** The training run started from this window: its step events and its GPU's telemetry, as they arrive. */
export const useLiveRunStore = defineStore('live-run', () => {
  const running = ref(false);
  /** The run's id once its first train.progress event arrived (the id is chosen here, see start). */
  const runId = ref<string | null>(null);
  /** When the first step event arrived and its step: the rate is measured from there, after data preparation. */
  let first: { at: number; step: number } | null = null;
  /** The newest step event; the full series go to listeners (charts append, nothing is rebuilt). */
  const last = shallowRef<TrainStepEvent | null>(null);
  const result = shallowRef<TrainResult | null>(null);
  /** A message a person can act on, with the error code (E_CANCELLED when cancelled). */
  const error = ref<string | null>(null);
  const cancelling = ref(false);
  /** The id this window chose for its run: Cancel works with it from the start, while the data is prepared. */
  const requestedId = ref<string | null>(null);
  /** Before the first step: what is being prepared (caching the data, the engine checking the request). */
  const preparing = shallowRef<TrainPreparingEvent | null>(null);
  /** The device the run trains on: 'cpu' or 'cuda:N'. */
  const device = ref('cpu');

  /** nvidia-smi's state while the run trains ("no NVIDIA GPU found" on a machine without one). */
  const gpu = ref<GpuState>({ status: 'starting', message: null, restarts: 0 });

  /**
   * A telemetry lease of the run's own, renewed while it trains, so the run's GPU timeline
   * does not depend on the Dashboard's panel being open. Returns how to end it.
   */
  async function telemetryLease(): Promise<() => void> {
    const client = useApiClient();
    let leaseId: string | undefined;
    const renew = async () => {
      const r = await client.call('telemetry.subscribe', { intervalMs: 500, historySeconds: 0, leaseId });
      leaseId = r.leaseId;
      gpu.value = r.gpu;
    };
    await renew().catch(() => undefined);
    const timer = setInterval(() => void renew().catch(() => undefined), LEASE_RENEW_MS);
    return () => {
      clearInterval(timer);
      if (leaseId) void client.call('telemetry.unsubscribe', { leaseId }).catch(() => undefined);
    };
  }

  const stepListeners = new Set<(e: TrainStepEvent) => void>();
  const gpuListeners = new Set<(p: RunGpuPoint) => void>();

  /** Seconds left at the rate since the first step event (preparing the data is not counted). */
  const etaSeconds = computed(() => {
    const e = last.value;
    if (!e || !first || e.globalStep <= first.step) return null;
    const secondsPerStep = (Date.now() - first.at) / 1000 / (e.globalStep - first.step);
    return secondsPerStep * (e.totalSteps - e.globalStep);
  });

  /** Trains to completion (or cancel/failure), following the events of this run only. */
  async function start(request: TrainRequest): Promise<TrainResult | null> {
    if (running.value) return null;
    const client = useApiClient();
    running.value = true;
    cancelling.value = false;
    runId.value = null;
    last.value = null;
    result.value = null;
    error.value = null;
    device.value = request.options.device;
    gpu.value = { status: 'starting', message: null, restarts: 0 };
    first = null;
    // The run's id is chosen here, so events of runs started elsewhere (CLI, another window) are never taken for it;
    // runId is set (and Cancel offered) once the service has the run and reports its first event.
    const ownId = runIdAt(new Date(), randomHex(3));
    requestedId.value = ownId;
    preparing.value = null;
    const offPreparing = client.on('train.preparing', (p) => {
      if (p.runId === ownId && !last.value) preparing.value = p;
    });
    const offProgress = client.on('train.progress', ({ runId: id, event }) => {
      if (id !== ownId) return;
      runId.value = id;
      if (event.type !== 'step') return;
      first ??= { at: Date.now(), step: event.globalStep };
      last.value = event;
      for (const l of stepListeners) l(event);
    });
    const gpuIndex = request.options.device.startsWith('cuda:') ? Number(request.options.device.slice('cuda:'.length)) : null;
    const offSample = client.on('telemetry.sample', (s) => {
      const g = s.gpus.find((x) => x.index === gpuIndex);
      if (!g) return;
      const p = { t: s.t, utilization: g.utilizationGpu, memoryMiB: g.memoryUsedMiB, powerW: g.powerDrawW };
      for (const l of gpuListeners) l(p);
    });
    const offGpu = client.on('telemetry.gpu', (state) => (gpu.value = state));
    const stopLease = await telemetryLease();
    try {
      result.value = await client.call('train.run', { ...request, runId: ownId });
      return result.value;
    } catch (err) {
      error.value = errorText(err);
      return null;
    } finally {
      offProgress();
      offPreparing();
      preparing.value = null;
      offSample();
      offGpu();
      stopLease();
      running.value = false;
    }
  }

  /** Asks the engine to stop the run at its next step; the run is kept as cancelled. */
  async function cancel(): Promise<void> {
    const id = runId.value ?? requestedId.value;
    if (!id || !running.value) return;
    cancelling.value = true;
    try {
      await useApiClient().call('train.cancel', { runId: id });
    } catch (err) {
      error.value = errorText(err);
    }
  }

  function onStep(l: (e: TrainStepEvent) => void): () => void {
    stepListeners.add(l);
    return () => stepListeners.delete(l);
  }
  function onGpu(l: (p: RunGpuPoint) => void): () => void {
    gpuListeners.add(l);
    return () => gpuListeners.delete(l);
  }

  return { running, runId, requestedId, preparing, last, result, error, cancelling, device, gpu, etaSeconds, start, cancel, onStep, onGpu };
});
