import type { IncomingMessage, ServerResponse } from 'node:http';

import { DOWNLOAD_PATH, DOWNLOAD_TOKEN_HEADER, DownloadKindSchema, type DownloadKind } from '../api/downloads';
import { ApiError, toApiError } from '../api/errors';
import { DownloadRefused } from '../core/downloads/download-plan';
import type { DownloadService } from '../core/downloads/download-service';
import { headerToken, isAllowedOrigin, tokensEqual } from './auth';
import { splitTarget } from './ws-api';

/** Zips streamed at once; more wait for none: they are answered 503 and the person tries again. */
export const MAX_CONCURRENT_DOWNLOADS = 4;
/**
 * A download's reader must take at least this much in every DOWNLOAD_RATE_WINDOW_MS (2 KiB/s), else it is dropped:
 * the stall timer restarts whenever the reader takes anything, so four readers taking a little a minute could
 * hold every slot (the same as the uploads of re-attack 14).
 */
export const DOWNLOAD_MIN_BYTES_PER_WINDOW = 64 * 1024;
export const DOWNLOAD_RATE_WINDOW_MS = 30_000;

export interface DownloadRouteOptions {
  downloads: DownloadService;
  token: string;
  allowedHosts: ReadonlySet<string>;
  log: (line: string) => void;
  /** How long the browser may take nothing before the download is dropped. */
  stallMs?: number;
  maxConcurrent?: number;
  /** The slowest a reader may take a zip: bytes per window (tests make them small). */
  minRate?: { bytes: number; windowMs: number };
}

/** Whether a request target is the download endpoint's. */
export function isDownloadTarget(target: string | undefined): boolean {
  const { pathname } = splitTarget(target);
  return pathname === DOWNLOAD_PATH || pathname.startsWith(`${DOWNLOAD_PATH}/`);
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' }).end(`${message}\n`);
}

/** The download's kind and id, from a ticket (the browser) or from the path with the token in a header (a script). */
function whichDownload(req: IncomingMessage, options: DownloadRouteOptions): { kind: DownloadKind; id: string } | { status: number; message: string } {
  const parts = splitTarget(req.url).pathname.slice(DOWNLOAD_PATH.length + 1).split('/');
  if (parts.length === 2 && parts[0] === 'ticket') {
    const found = /^[A-Za-z0-9_-]{16,64}$/.test(parts[1]) ? options.downloads.redeem(parts[1]) : null;
    return found ?? { status: 403, message: 'this download link was used already or has expired (a link is good once, for a minute): press Download again' };
  }
  if (!tokensEqual(options.token, headerToken(req))) {
    return { status: 401, message: `missing or wrong token: send it in the ${DOWNLOAD_TOKEN_HEADER} header (or Authorization: Bearer), never in the URL` };
  }
  // Two parts, each decoded once: "../" (or %2e%2e%2f) cannot reach another folder, as the id is checked as one name.
  const kind = DownloadKindSchema.safeParse(parts[0]);
  if (parts.length !== 2 || !kind.success) return { status: 404, message: `no such download: ${DOWNLOAD_PATH}/report/<report id> or ${DOWNLOAD_PATH}/run/<run id>` };
  let id: string;
  try {
    id = decodeURIComponent(parts[1]);
  } catch {
    return { status: 400, message: 'the id is not valid percent-encoding' };
  }
  return { kind: kind.data, id };
}

/**
 * GET /download/ticket/<ticket> (the UI) or /download/<report|run>/<id> with the token in a header:
 * the same Host and Origin checks as the WebSocket, then a zip streamed as it is written.
 */
export function downloadHandler(options: DownloadRouteOptions) {
  const { downloads, allowedHosts, log } = options;
  const maxConcurrent = options.maxConcurrent ?? MAX_CONCURRENT_DOWNLOADS;
  let active = 0;
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET') {
      res.setHeader('Allow', 'GET');
      return refuse(res, 405, 'downloads are GET requests');
    }
    if (!isAllowedOrigin(req.headers.origin, req.headers.host, allowedHosts)) return refuse(res, 403, 'origin not allowed');
    // A browser says where a request came from; another site's page (a link, an <img>) is refused before any ticket is spent.
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return refuse(res, 403, `a download is started from this workbench's own page, not from another site (${site})`);
    // Before the ticket is looked at: a download refused for being one too many leaves its ticket good.
    if (active >= maxConcurrent) return refuse(res, 503, `${maxConcurrent} downloads are being sent already: try again when one has finished`);
    const which = whichDownload(req, options);
    if ('status' in which) return refuse(res, which.status, which.message);

    let plan;
    try {
      plan = await downloads.plan(which.kind, which.id);
    } catch (err) {
      const status = err instanceof DownloadRefused ? err.status : err instanceof ApiError && err.code === 'E_BAD_INPUT' ? 400 : 422;
      // Our refusals name workspace files relative to it already; anything else (a system call's words) is cleaned as the API cleans it.
      const message = err instanceof DownloadRefused ? err.message : toApiError(err).toPayload(downloads.root).message;
      return refuse(res, status, `${which.kind} ${which.id.slice(0, 200)} cannot be downloaded: ${message}`);
    }
    active++;
    const minRate = options.minRate ?? { bytes: DOWNLOAD_MIN_BYTES_PER_WINDOW, windowMs: DOWNLOAD_RATE_WINDOW_MS };
    // What the socket has handed to the kernel, i.e. what the reader took (a kept-alive socket counts from here).
    const taken = () => res.socket?.bytesWritten ?? 0;
    let mark = taken();
    let tooSlow: string | null = null;
    const slow = setInterval(() => {
      const took = taken() - mark;
      mark += took;
      if (took >= minRate.bytes) return;
      tooSlow = `the reader took ${took} bytes in ${minRate.windowMs / 1000} s, less than the ${minRate.bytes} a download must to keep its slot`;
      res.destroy();
    }, minRate.windowMs);
    try {
      res.writeHead(200, {
        'Content-Type': 'application/zip',
        // The name is made of [A-Za-z0-9._-] only (safeFileName), so it needs no quoting rules beyond the quotes.
        'Content-Disposition': `attachment; filename="${plan.fileName}"`,
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
      });
      const written = await downloads.writeZip(plan, res, { stallMs: options.stallMs });
      res.end();
      if (written.skipped.length) log(`download ${plan.fileName}: left out ${written.skipped.map((s) => `${s.name} (${s.reason})`).join(', ')}`);
    } catch (err) {
      // Headers are gone: the browser sees a failed download, and the log says why.
      log(`download ${plan.fileName} stopped: ${tooSlow ?? (err as Error).message}`);
      res.destroy();
    } finally {
      clearInterval(slow);
      active--;
    }
  };
}
