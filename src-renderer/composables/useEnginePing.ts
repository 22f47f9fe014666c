import { onScopeDispose, shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';

export interface PingSample {
  /** ms since epoch */
  at: number;
  /** round trip renderer -> main -> engine host -> back, ms; null when the call failed */
  roundTripMs: number | null;
}

export interface UseEnginePingOptions {
  intervalMs?: number;
  maxSamples?: number;
}

/**
 * Measures the round trip to the engine host at a fixed interval: a live
 * heartbeat that shows a stalled or restarting host at a glance.
 */
export function useEnginePing(options: UseEnginePingOptions = {}) {
  const intervalMs = options.intervalMs ?? 1000;
  const maxSamples = options.maxSamples ?? 120;
  const samples = shallowRef<PingSample[]>([]);
  const listeners = new Set<(sample: PingSample) => void>();
  let inFlight = false;

  const tick = async () => {
    if (inFlight) return;
    inFlight = true;
    const start = performance.now();
    let sample: PingSample;
    try {
      await useApiClient().call('engine.ping', {});
      sample = { at: Date.now(), roundTripMs: performance.now() - start };
    } catch {
      sample = { at: Date.now(), roundTripMs: null };
    }
    inFlight = false;
    const next = samples.value.length >= maxSamples ? samples.value.slice(1) : samples.value.slice();
    next.push(sample);
    samples.value = next;
    for (const l of listeners) l(sample);
  };

  void tick();
  const timer = setInterval(() => void tick(), intervalMs);
  onScopeDispose(() => clearInterval(timer));

  return {
    samples,
    /** Called with each new sample, for charts that append instead of re-rendering. */
    onSample(listener: (sample: PingSample) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
