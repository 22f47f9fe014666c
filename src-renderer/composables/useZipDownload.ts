import type { DownloadKind, DownloadTicket } from '@api/downloads';
import { ref, shallowRef } from 'vue';

import { errorText } from '../stores/error-text';
import { useApiClient } from '../transport/client-instance';

/**
 * Serve mode's zip downloads (a report, a run's files): a one-time ticket is asked for over the API,
 * where the token is checked and a refusal names the file, then the browser fetches the zip from the
 * ticket's URL and saves it itself, streamed to disk. The desktop app has no such server: there
 * `offered` is false and the save dialog's Export is the way.
 */
export function useZipDownload() {
  const offered = useApiClient().transport.kind === 'websocket';
  const busy = ref(false);
  /** Why the download was refused (code and message). */
  const error = ref<string | null>(null);
  /** The last download handed to the browser: its file name, size and what it left out. */
  const started = shallowRef<DownloadTicket | null>(null);

  async function download(kind: DownloadKind, id: string): Promise<boolean> {
    if (busy.value) return false;
    busy.value = true;
    error.value = null;
    started.value = null;
    try {
      const ticket = await useApiClient().call('downloads.prepare', { kind, id });
      saveFromUrl(ticket.url, ticket.fileName);
      started.value = ticket;
      return true;
    } catch (err) {
      error.value = errorText(err);
      return false;
    } finally {
      busy.value = false;
    }
  }

  return { offered, busy, error, started, download };
}

/** A same-origin link with `download`: the browser saves the response as a file and the page stays. */
function saveFromUrl(url: string, fileName: string): void {
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  link.rel = 'noopener';
  document.body.appendChild(link);
  link.click();
  link.remove();
}
