import type { IncomingMessage, ServerResponse } from 'node:http';

import { DOWNLOAD_PATH, DOWNLOAD_TOKEN_HEADER, DownloadKindSchema, type DownloadKind } from '../api/downloads';
import { ApiError, toApiError } from '../api/errors';
import { printable } from '../api/shell-word';
import { DownloadRefused, type DownloadPlan } from '../core/downloads/download-plan';
import type { DownloadService } from '../core/downloads/download-service';
import { headerToken, isAllowedOrigin, tokensEqual } from './auth';
import { TRANSFER_GRACE_MS, TransferSlots, type Transfer } from './transfer-slots';
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
/**
 * With every slot taken, a new download takes the slot of the slowest one averaging under this (TransferSlots):
 * four readers at 40 KB/s, over the floor, held every slot for the ten minutes a 23 MB zip took (re-attack 16).
 */
export const DOWNLOAD_FAIR_BYTES_PER_SECOND = 256 * 1024;

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
  /** Below this average (bytes a second) a download gives its slot to a new one when all are taken. */
  fairBytesPerSecond?: number;
}

/** Whether a request target is the download endpoint's. */
export function isDownloadTarget(target: string | undefined): boolean {
  const { pathname } = splitTarget(target);
  return pathname === DOWNLOAD_PATH || pathname.startsWith(`${DOWNLOAD_PATH}/`);
}

/** A refusal in words; what the request named in them is escaped (ESC, U+202E), as a person reads it in a browser or terminal. */
function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' }).end(`${printable(message)}\n`);
}

/** A download is asked for by a ticket (the browser) or by the path with the token in a header (a script). */
const SPENT = { status: 403, message: 'this download link was used already or has expired (a link is good once, for a minute): press Download again' };

type Refusal = { status: number; message: string };

/** The ticket in a /download/ticket/<ticket> path, or null for a path with a kind and an id. */
function ticketOf(req: IncomingMessage): string | null {
  const parts = splitTarget(req.url).pathname.slice(DOWNLOAD_PATH.length + 1).split('/');
  return parts.length === 2 && parts[0] === 'ticket' ? parts[1] : null;
}

/**
 * The download a request asks for, or why it may not have one (no good ticket, no token, no such path); a ticket is
 * only looked at here, spent once the download is planned, and given back if it is refused for being one too many.
 */
function whichDownload(req: IncomingMessage, options: DownloadRouteOptions): { kind: DownloadKind; id: string } | Refusal {
  const ticket = ticketOf(req);
  if (ticket !== null) return (/^[A-Za-z0-9_-]{16,64}$/.test(ticket) ? options.downloads.peek(ticket) : null) ?? SPENT;
  if (!tokensEqual(options.token, headerToken(req))) {
    return { status: 401, message: `missing or wrong token: send it in the ${DOWNLOAD_TOKEN_HEADER} header (or Authorization: Bearer), never in the URL` };
  }
  // Two parts, each decoded once: "../" (or %2e%2e%2f) cannot reach another folder, as the id is checked as one name.
  const parts = splitTarget(req.url).pathname.slice(DOWNLOAD_PATH.length + 1).split('/');
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
  const minRate = options.minRate ?? { bytes: DOWNLOAD_MIN_BYTES_PER_WINDOW, windowMs: DOWNLOAD_RATE_WINDOW_MS };
  const slots = new TransferSlots(maxConcurrent, options.fairBytesPerSecond ?? DOWNLOAD_FAIR_BYTES_PER_SECOND, 'download', Math.min(TRANSFER_GRACE_MS, minRate.windowMs));

  /** The plan's zip, written as it is made, in a slot the slowest-transfer rule may take back. */
  async function send(res: ServerResponse, plan: DownloadPlan): Promise<void> {
    // What the connection has accepted is handed to the kernel, whose buffer a slow reader drains. It is not what the
    // reader has read: a full buffer takes nothing until it drains.
    const start = res.socket?.bytesWritten ?? 0;
    const accepted = () => (res.socket?.bytesWritten ?? start) - start;
    let tooSlow: string | null = null;
    const drop = (why: string) => {
      tooSlow = why;
      res.destroy();
    };
    const entry: Transfer = { since: Date.now(), moved: accepted, evict: drop };
    slots.add(entry);
    let mark = 0;
    const slow = setInterval(() => {
      const took = accepted() - mark;
      mark += took;
      if (took < minRate.bytes) drop(`the connection accepted ${took} bytes in ${minRate.windowMs / 1000} s, less than the ${minRate.bytes} a download must to keep its slot`);
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
      slots.delete(entry);
    }
  }

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET') {
      res.setHeader('Allow', 'GET');
      return refuse(res, 405, 'downloads are GET requests');
    }
    if (!isAllowedOrigin(req.headers.origin, req.headers.host, allowedHosts)) return refuse(res, 403, 'origin not allowed');
    // A browser says where a request came from; another site's page (a link, an <img>) is refused before any ticket is spent.
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return refuse(res, 403, `a download is started from this workbench's own page, not from another site (${site})`);
    // Checked and planned before a slot is claimed: only a download that will be sent may take a slow one's place.
    const which = whichDownload(req, options);
    if ('status' in which) return refuse(res, which.status, which.message);
    let plan: DownloadPlan;
    try {
      plan = await downloads.plan(which.kind, which.id);
    } catch (err) {
      const status = err instanceof DownloadRefused ? err.status : err instanceof ApiError && err.code === 'E_BAD_INPUT' ? 400 : 422;
      // Our refusals name workspace files relative to it already; anything else (a system call's words) is cleaned as the API cleans it.
      const message = err instanceof DownloadRefused ? err.message : toApiError(err).toPayload(downloads.root).message;
      return refuse(res, status, `${which.kind} ${which.id.slice(0, 200)} cannot be downloaded: ${message}`);
    }
    // The ticket is spent before a slot is claimed, once: two requests with it were both planned, and the one that
    // found it spent had already made a slow download give up its slot (re-attack 18). Given back if no slot is free.
    const ticket = ticketOf(req);
    const spent = ticket === null ? null : downloads.redeem(ticket);
    if (ticket !== null && spent === null) return refuse(res, SPENT.status, SPENT.message);
    if (!slots.claim()) {
      spent?.giveBack();
      return refuse(res, 503, `${maxConcurrent} downloads are being sent already: try again when one has finished`);
    }
    await send(res, plan);
  };
}
