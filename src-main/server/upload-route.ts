import type { IncomingMessage, ServerResponse } from 'node:http';

import { DOWNLOAD_TOKEN_HEADER } from '../api/downloads';
import { ApiError, toApiError } from '../api/errors';
import { DEFAULT_SOURCE_UPLOAD_MAX_BYTES, SOURCE_UPLOAD_PATH, sourceFileNameProblem } from '../api/source-uploads';
import { addSourceFile, checkSourceFileName, SourceFileRefused, tooLargeRefusal } from '../core/workspace/source-files';
import type { Workspace } from '../core/workspace/workspace';
import { headerToken, isAllowedOrigin, tokensEqual } from './auth';
import { IngressMeter } from './ingress-meter';
import { TRANSFER_GRACE_MS, TransferSlots, type Transfer } from './transfer-slots';
import { splitTarget } from './ws-api';
import { quotedText } from '../api/shell-word';

/** Uploads written at once; more are answered 503 and the page says to try again. */
export const MAX_CONCURRENT_UPLOADS = 4;
/** A sender that sends nothing for this long is dropped (its partial file removed). */
export const UPLOAD_STALL_MS = 60_000;
/**
 * An upload must bring at least this much in every UPLOAD_RATE_WINDOW_MS (2 KiB/s; any real link does far more),
 * else it is dropped: four senders of a byte every 20 s held every upload slot for as long as they liked, the
 * stall timer restarting at each byte, and every other window's upload was answered 503 (re-attack 14).
 */
export const UPLOAD_MIN_BYTES_PER_WINDOW = 64 * 1024;
export const UPLOAD_RATE_WINDOW_MS = 30_000;
/** With every slot taken, a new upload takes the slot of the slowest one averaging under this (TransferSlots). */
export const UPLOAD_FAIR_BYTES_PER_SECOND = 256 * 1024;
/**
 * Bytes read from all uploads together in a second (a 1 GiB file in 16 s; `burst` at once). Unmetered, four uploads
 * of 1 GiB were read at 242 MiB a second, held 1.74 cores of a 2-core rig, and kept every window's lists 2.2-3.4
 * times slower (re-attack 27). The WebSocket's own meter (ws-limits.ts) is apart: an upload never slows a window.
 */
export const UPLOAD_BYTES_PER_SECOND = 64 * 1024 * 1024;
const UPLOAD_BURST_BYTES = 4 * 1024 * 1024;
/** What a read of an upload costs the meter at least: a stream of 1-byte chunks pays for each read's own work. */
const UPLOAD_MIN_READ_CHARGE = 1024;
/**
 * After a refusal while the sender is still sending, what follows is read and dropped (never kept) for at
 * most this long and this many bytes, so a browser gets to read the answer; then the connection is closed.
 * Closing at once makes the kernel reset it, and the sender sees "connection reset" instead of the reason.
 */
const LINGER_MS = 2_000;
const LINGER_BYTES = 8 * 1024 * 1024;

export interface UploadRouteOptions {
  workspace: Workspace;
  token: string;
  allowedHosts: ReadonlySet<string>;
  log: (line: string) => void;
  /** The largest file taken; DEFAULT_SOURCE_UPLOAD_MAX_BYTES unless a test makes it small. */
  maxBytes?: number;
  stallMs?: number;
  maxConcurrent?: number;
  /** The slowest an upload may be: bytes per window (tests make them small). */
  minRate?: { bytes: number; windowMs: number };
  /** Below this average (bytes a second) an upload gives its slot to a new one when all are taken. */
  fairBytesPerSecond?: number;
  /** Bytes read from all uploads together in a second (UPLOAD_BYTES_PER_SECOND unless a test says otherwise). */
  bytesPerSecond?: number;
  /** Free space a file must leave on the workspace's disk (source-files' default unless a test says otherwise). */
  keepFreeBytes?: number;
}

/**
 * The request's chunks as they come, counted into `rate.got` (the slowest-upload check reads it) and charged to the
 * uploads' meter: while it is in debt the next chunk is not asked for, so the request's buffer fills and Node stops
 * reading its socket (the sender waits in TCP's window), until the meter lets every waiting upload go on.
 */
async function* metered(chunks: AsyncIterable<Uint8Array>, rate: { got: number }, meter: IngressMeter): AsyncGenerator<Uint8Array> {
  let held: { promise: Promise<void>; go: () => void } | null = null;
  const reader = meter.open(
    () => {
      let go = () => {};
      const promise = new Promise<void>((resolve) => (go = resolve));
      held = { promise, go };
    },
    () => {
      const was = held;
      held = null;
      was?.go();
    },
  );
  try {
    for await (const chunk of chunks) {
      rate.got += chunk.length;
      reader.read(chunk.length);
      yield chunk;
      // After the chunk is written: the wait falls between reads, as the WebSocket meter's pause does.
      const wait = held as { promise: Promise<void> } | null;
      if (wait) await wait.promise;
    }
  } finally {
    reader.close();
  }
}

/** Whether a request target is the upload endpoint's. */
export function isUploadTarget(target: string | undefined): boolean {
  const { pathname } = splitTarget(target);
  return pathname === SOURCE_UPLOAD_PATH || pathname.startsWith(`${SOURCE_UPLOAD_PATH}/`);
}

/** Answers, and when the sender is still sending, drops the rest for a moment before closing (see LINGER_MS). */
function answer(req: IncomingMessage, res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  const bytes = Buffer.from(status >= 400 ? `${body}\n` : body);
  const headers = { 'Content-Type': contentType, 'Content-Length': bytes.length, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' };
  if (req.complete || req.destroyed) {
    res.writeHead(status, headers).end(bytes);
    return;
  }
  res.writeHead(status, { ...headers, Connection: 'close' });
  res.write(bytes);
  let dropped = 0;
  const close = () => {
    clearTimeout(timer);
    req.off('data', drop);
    if (!res.writableEnded) res.end();
  };
  const drop = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_BYTES) {
      close();
      req.socket.destroy();
    }
  };
  const timer = setTimeout(() => {
    close();
    req.socket.destroy();
  }, LINGER_MS);
  req.on('data', drop);
  req.once('end', close);
  req.once('close', close);
  req.resume();
}

/** The file name from the path's one segment, decoded once; or why not. */
function nameFrom(target: string | undefined): string | { message: string } {
  const rest = splitTarget(target).pathname.slice(SOURCE_UPLOAD_PATH.length + 1);
  if (rest === '') return { message: `no file name: PUT ${SOURCE_UPLOAD_PATH}/<file name>` };
  // An unencoded "/" is a second segment; an encoded one (%2F) is refused by the name's own rules.
  if (rest.includes('/')) return { message: `${JSON.stringify(rest.slice(0, 200))} is a path: PUT ${SOURCE_UPLOAD_PATH}/<file name>, the name percent-encoded` };
  try {
    return decodeURIComponent(rest);
  } catch {
    return { message: 'the file name is not valid percent-encoding' };
  }
}

/** Content-Length as a number, undefined when absent (a chunked upload is counted as it comes). */
function declaredLength(req: IncomingMessage): number | undefined | null {
  const raw = req.headers['content-length'];
  if (raw === undefined) return undefined;
  return /^\d{1,16}$/.test(raw) ? Number(raw) : null;
}

/**
 * PUT /upload/sources/<name>: a data file's bytes, streamed into the workspace's sources/ folder. The same Host
 * and Origin checks as the WebSocket, the serve token in a header (a cross-site form can send neither a PUT nor
 * a header, and another site's fetch with one is stopped by the browser's preflight, which this never allows),
 * a size limit checked against Content-Length before a byte is read and against the bytes as they arrive.
 */
export function uploadHandler(options: UploadRouteOptions) {
  const { workspace, token, allowedHosts, log } = options;
  const maxBytes = options.maxBytes ?? DEFAULT_SOURCE_UPLOAD_MAX_BYTES;
  const stallMs = options.stallMs ?? UPLOAD_STALL_MS;
  const maxConcurrent = options.maxConcurrent ?? MAX_CONCURRENT_UPLOADS;
  const minRate = options.minRate ?? { bytes: UPLOAD_MIN_BYTES_PER_WINDOW, windowMs: UPLOAD_RATE_WINDOW_MS };
  const fair = options.fairBytesPerSecond ?? UPLOAD_FAIR_BYTES_PER_SECOND;
  const slots = new TransferSlots(maxConcurrent, fair, 'upload', Math.min(TRANSFER_GRACE_MS, minRate.windowMs));
  const meter = new IngressMeter({ bytes: options.bytesPerSecond ?? UPLOAD_BYTES_PER_SECOND, burst: UPLOAD_BURST_BYTES, minRead: UPLOAD_MIN_READ_CHARGE });
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'PUT') {
      res.setHeader('Allow', 'PUT');
      return answer(req, res, 405, `an upload is a PUT of the file's bytes to ${SOURCE_UPLOAD_PATH}/<file name>, with the serve token in the ${DOWNLOAD_TOKEN_HEADER} header`);
    }
    if (!isAllowedOrigin(req.headers.origin, req.headers.host, allowedHosts)) return answer(req, res, 403, 'origin not allowed');
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return answer(req, res, 403, `an upload is sent from this workbench's own page, not from another site (${site})`);
    if (!tokensEqual(token, headerToken(req))) return answer(req, res, 401, `missing or wrong token: send it in the ${DOWNLOAD_TOKEN_HEADER} header (or Authorization: Bearer), never in the URL`);
    const name = nameFrom(req.url);
    if (typeof name !== 'string') return answer(req, res, 400, name.message);
    const declared = declaredLength(req);
    if (declared === null) return answer(req, res, 400, 'Content-Length is not a number');
    // Refused before a slot is claimed: a bad name must not take a slow upload's place for nothing.
    const badName = sourceFileNameProblem(name);
    if (badName) return answer(req, res, 400, badName);
    if (declared !== undefined && declared > maxBytes) return answer(req, res, 413, tooLargeRefusal(name, declared, maxBytes, 'is').message);
    if (!slots.claim()) return answer(req, res, 503, `${maxConcurrent} uploads are being written already: try again when one has finished`);

    const stalled = () => req.destroy(new Error(`the sender sent nothing for ${stallMs / 1000} s`));
    req.setTimeout(stallMs, stalled);
    const rate = { got: 0, mark: 0 };
    const entry: Transfer = { since: Date.now(), moved: () => rate.got, evict: (why) => req.destroy(new Error(why)) };
    slots.add(entry);
    const slow = setInterval(() => {
      const sent = rate.got - rate.mark;
      rate.mark = rate.got;
      if (sent < minRate.bytes) req.destroy(new Error(`the sender sent ${sent} bytes in ${minRate.windowMs / 1000} s, less than the ${minRate.bytes} an upload must to keep its slot`));
    }, minRate.windowMs);
    try {
      checkSourceFileName(name);
      // The request is not destroyed when the write stops early: the refusal is still to be answered on it.
      const added = await addSourceFile(workspace, name, metered(req.iterator({ destroyOnReturn: false }), rate, meter), { maxBytes, declaredBytes: declared, keepFreeBytes: options.keepFreeBytes });
      answer(req, res, 201, JSON.stringify(added), 'application/json; charset=utf-8');
    } catch (err) {
      const shown = quotedText(name);
      // A request read to its end is destroyed too (autoDestroy): its sender still waits for the answer.
      if (res.destroyed || (req.destroyed && !req.complete)) {
        // The sender went (cancelled, or the connection dropped): nothing to answer; the partial file is gone.
        log(`upload ${shown} stopped: ${(err as Error).message}`);
        return;
      }
      const status = err instanceof SourceFileRefused ? err.status : err instanceof ApiError && err.code === 'E_BAD_INPUT' ? 400 : err instanceof ApiError && err.code !== 'E_INTERNAL' ? 422 : 500;
      const message = toApiError(err).toPayload(workspace.root).message;
      if (status >= 500) log(`upload ${shown} failed: ${message}`);
      answer(req, res, status, message);
    } finally {
      slots.delete(entry);
      clearInterval(slow);
      req.off('timeout', stalled);
      req.socket?.setTimeout(0);
    }
  };
}
