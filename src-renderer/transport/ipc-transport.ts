import type { TrainbenchBridge } from '@api/bridge';

import type { Transport, TransportState } from './transport';

/** Electron: the preload's bridge is always connected while the window lives. */
export function createIpcTransport(bridge: TrainbenchBridge): Transport {
  return {
    kind: 'electron-ipc',
    state: (): TransportState => 'connected',
    onState: () => () => undefined,
    call: (method, params) => bridge.call(method, params),
    onEvent: (listener) => bridge.onEvent(listener),
    close: () => undefined,
  };
}
