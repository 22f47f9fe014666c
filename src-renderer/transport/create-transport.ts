import { DOWNLOAD_TOKEN_HEADER } from '@api/downloads';
import { TOKEN_CHECK_PATH } from '@api/wire';

import { createIpcTransport } from './ipc-transport';
import { httpSourceUploader, ipcSourceUploader } from './source-uploader';
import type { Transport } from './transport';
import { createWsTransport, serveSocketUrl, takeServeToken } from './ws-transport';

export const STALE_TOKEN_NOTICE =
  "This tab's access token is not the one this Trainbench server uses (it was started again since, or the link is " +
  "another server's), so the workbench refuses it. Open the address trainbench serve printed when it started (it ends in ?token=…).";

/** Asks the server whether it takes the token: true or false, or null when it could not be asked. */
function tokenCheck(token: string): () => Promise<boolean | null> {
  return () =>
    fetch(TOKEN_CHECK_PATH, { headers: { [DOWNLOAD_TOKEN_HEADER]: token }, cache: 'no-store' }).then(
      (res) => (res.status === 204 ? true : res.status === 401 ? false : null),
      () => null,
    );
}

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
  const ws = createWsTransport({ url: serveSocketUrl(window.location, token), checkToken: token ? tokenCheck(token) : undefined, refusedNotice: STALE_TOKEN_NOTICE });
  const transport: Transport = { ...ws, sourceUploads: httpSourceUploader(token) };
  // A tab keeps the token it was opened with (sessionStorage); a copied link carries none, and the server refuses it.
  return token ? transport : { ...transport, notice: () => NO_TOKEN_NOTICE };
}
