import { createIpcTransport } from './ipc-transport';
import { httpSourceUploader, ipcSourceUploader } from './source-uploader';
import type { Transport } from './transport';
import { createWsTransport, serveSocketUrl, takeServeToken } from './ws-transport';

export const NO_TOKEN_NOTICE =
  'This tab has no access token, so the workbench refuses it. Open the address trainbench serve printed (it ends in ?token=…), ' +
  'or go on in the tab that has it: each tab keeps the token it was opened with, and a copied link carries none.';

/** Electron IPC when the preload bridge is there, serve mode's WebSocket otherwise. */
export function createTransport(): Transport {
  if (window.trainbench) {
    const ipc = createIpcTransport(window.trainbench);
    return { ...ipc, sourceUploads: ipcSourceUploader(ipc) };
  }
  const token = takeServeToken(window.location, window.history, window.sessionStorage) ?? '';
  // The upload route takes the same token as the WebSocket, in a header.
  const transport: Transport = { ...createWsTransport({ url: serveSocketUrl(window.location, token) }), sourceUploads: httpSourceUploader(token) };
  // A tab keeps the token it was opened with (sessionStorage); a copied link carries none, and the server refuses it.
  return token ? transport : { ...transport, notice: NO_TOKEN_NOTICE };
}
