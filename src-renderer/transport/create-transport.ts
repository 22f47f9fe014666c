import { createIpcTransport } from './ipc-transport';
import type { Transport } from './transport';
import { createWsTransport, serveSocketUrl, takeServeToken } from './ws-transport';

/** Electron IPC when the preload bridge is there, serve mode's WebSocket otherwise. */
export function createTransport(): Transport {
  if (window.trainbench) return createIpcTransport(window.trainbench);
  const token = takeServeToken(window.location, window.history, window.sessionStorage) ?? '';
  return createWsTransport({ url: serveSocketUrl(window.location, token) });
}
