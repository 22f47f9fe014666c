import type { CallOutcome, TrainbenchBridge } from '../api/bridge';

/** The parts of ipcRenderer the bridge needs; injected so the shape is testable without Electron. */
export interface BridgeIpc {
  invoke(channel: string, method: string, params: unknown): Promise<CallOutcome>;
  on(channel: string, listener: (event: unknown, name: string, data: unknown) => void): void;
  removeListener(channel: string, listener: (event: unknown, name: string, data: unknown) => void): void;
}

export function buildBridge(ipc: BridgeIpc, callChannel: string, eventChannel: string): TrainbenchBridge {
  return Object.freeze({
    transport: 'electron-ipc' as const,
    // The main process validates method and params; the preload stays a pipe
    // (and free of zod, keeping the sandboxed bundle small).
    call(method: string, params: unknown): Promise<CallOutcome> {
      return ipc.invoke(callChannel, String(method), params);
    },
    onEvent(listener: (event: string, data: unknown) => void): () => void {
      // Never hand the IpcRendererEvent (which holds `sender`) to page code.
      const wrapped = (_event: unknown, name: string, data: unknown) => listener(name, data);
      ipc.on(eventChannel, wrapped);
      return () => ipc.removeListener(eventChannel, wrapped);
    },
  });
}
