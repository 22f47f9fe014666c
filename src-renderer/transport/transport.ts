import type { CallOutcome } from '@api/bridge';

import type { SourceUploader } from './source-uploader';

export type TransportState = 'connecting' | 'connected' | 'reconnecting' | 'closed';
export type TransportKind = 'websocket' | 'electron-ipc';

/** How the renderer reaches the main process: Electron IPC or serve mode's WebSocket. */
export interface Transport {
  readonly kind: TransportKind;
  state(): TransportState;
  onState(listener: (state: TransportState) => void): () => void;
  call(method: string, params: unknown): Promise<CallOutcome>;
  onEvent(listener: (event: string, data: unknown) => void): () => void;
  close(): void;
  /** Adds data files to the workspace's sources/ folder; absent where a test's transport has none. */
  readonly sourceUploads?: SourceUploader;
  /**
   * Why it cannot connect, in words (a serve-mode tab opened without its token, or with one the server refuses);
   * null while there is nothing to say. Read again at each change of state.
   */
  notice?(): string | null;
}

/** A tiny listener set, used by both transports. */
export function listenerSet<A extends unknown[]>() {
  const listeners = new Set<(...args: A) => void>();
  return {
    add(listener: (...args: A) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    emit(...args: A): void {
      for (const l of listeners) l(...args);
    },
  };
}
