import { createIpcTransport } from './ipc-transport';
import { httpSourceUploader, ipcSourceUploader } from './source-uploader';
import type { Transport } from './transport';
import { createWsTransport, serveSocketUrl, takeServeToken } from './ws-transport';

/** Electron IPC when the preload bridge is there, serve mode's WebSocket otherwise. */
export function createTransport(): Transport {
  if (window.trainbench) {
    const ipc = createIpcTransport(window.trainbench);
    return { ...ipc, sourceUploads: ipcSourceUploader(ipc) };
  }
  const token = takeServeToken(window.location, window.history, window.sessionStorage) ?? '';
  // The upload route takes the same token as the WebSocket, in a header.
  return { ...createWsTransport({ url: serveSocketUrl(window.location, token) }), sourceUploads: httpSourceUploader(token) };
}
