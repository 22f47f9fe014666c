import type { EngineStatusEvent } from '@api/events';
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';
import type { TransportKind, TransportState } from '../transport/transport';

/** The link to the main process and the engine host's health, for the status bar. */
export const useConnectionStore = defineStore('connection', () => {
  /** Which transport this window uses. */
  const transportKind = ref<TransportKind | null>(null);
  /** connecting / connected / reconnecting / closed. */
  const transportState = ref<TransportState>('connecting');
  /** Last engine.status event (state, pid, restarts, last failure). */
  const engine = shallowRef<EngineStatusEvent | null>(null);
  /** Why this window cannot connect, when its transport knows (a serve tab without its token, or with a stale one). */
  const notice = ref<string | null>(null);

  let stop: (() => void) | null = null;

  /** Starts following the transport and the engine.status stream. */
  function start(): void {
    if (stop) return;
    const client = useApiClient();
    transportKind.value = client.transport.kind;
    transportState.value = client.transport.state();
    notice.value = client.transport.notice?.() ?? null;
    const offState = client.transport.onState((s) => {
      transportState.value = s;
      notice.value = client.transport.notice?.() ?? null;
      if (s === 'connected') void refreshEngine();
    });
    const offEngine = client.on('engine.status', (status) => {
      engine.value = status;
    });
    stop = () => {
      offState();
      offEngine();
    };
    void refreshEngine();
  }

  async function refreshEngine(): Promise<void> {
    try {
      engine.value = await useApiClient().call('engine.status', {});
    } catch {
      // shown through transportState; the next reconnect refreshes again
    }
  }

  function dispose(): void {
    stop?.();
    stop = null;
  }

  return { transportKind, transportState, engine, notice, start, dispose };
});
