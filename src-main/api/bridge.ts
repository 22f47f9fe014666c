import type { ApiErrorPayload } from './errors';

/** What a call returns across a transport: errors travel as data so their codes survive. */
export type CallOutcome = { ok: true; result: unknown } | { ok: false; error: ApiErrorPayload };

/**
 * The object the Electron preload exposes as `window.trainbench`: two named
 * functions, never ipcRenderer itself. The main process validates every call.
 */
export interface TrainbenchBridge {
  readonly transport: 'electron-ipc';
  call(method: string, params: unknown): Promise<CallOutcome>;
  /** Returns a function that unsubscribes. */
  onEvent(listener: (event: string, data: unknown) => void): () => void;
}

/** IPC channel names shared by the preload and the main process. */
export const IPC_CALL_CHANNEL = 'trainbench:call';
export const IPC_EVENT_CHANNEL = 'trainbench:event';
