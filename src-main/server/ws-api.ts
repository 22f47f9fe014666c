import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';

import { WebSocketServer, type WebSocket } from 'ws';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import { isMethodName, type MethodName } from '../api/methods';
import type { ServerMessage } from '../api/wire';
import { RequestMessageSchema, TOKEN_QUERY_PARAM, WS_PATH } from '../api/wire';
import { toApiError } from '../core/api-router';
import { FairSlots } from '../core/common/fair-slots';
import type { Services } from '../core/services';
import { isAllowedOrigin, tokensEqual } from './auth';
import { limitedLog } from './log-limit';
import { asksNothing, SHARED_READ_METHODS, SharedReads } from './shared-reads';
import { ANSWER_HIGH_WATER_BYTES, ANSWER_STALL_MS, MAX_WAITING_ANSWER_BYTES, Outbox } from './ws-outbox';

/** Largest message a client may send (a frame over it closes that connection with 1009). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** Unsent bytes a client may leave queued before it is dropped: it is not reading its socket. */
export const MAX_BUFFERED_BYTES = 32 * 1024 * 1024;
/** Requests one connection may have in flight; more are answered at once with an error, so work queued per client is bounded. */
export const MAX_IN_FLIGHT = 32;
/** Open connections; the UI needs one per window. */
export const MAX_CLIENTS = 32;
/**
 * Requests worked on at once over all connections: each may hold a bounded read (a run.json up to 4 MiB), and the
 * per-connection limit times the clients would allow 1,024 of them at once; a window has a few in flight. More wait
 * their turn, one connection's after another's (FairSlots), never refused.
 */
export const MAX_IN_FLIGHT_TOTAL = 64;
/**
 * Methods that read a file whole (a run's events up to 64 MiB, a source's preview, a report) or walk a folder of the
 * workspace (every run, every report): they run a few at a time in slots of their own, so no number of them keeps a
 * cheap request waiting. In the shared slots, 12 connections of one token firing waves of 64 runs.get kept every
 * app.info waiting 13 s (re-attack 17); waves of runs.list, which reads each of 263 runs, 6 s (re-attack 18).
 */
export const HEAVY_METHODS: ReadonlySet<MethodName> = new Set<MethodName>([
  'runs.get',
  'runs.trace',
  'datasets.inspect',
  'reports.get',
  'reports.figure',
  'runs.list',
  'runs.compareSpeed',
  'datasets.list',
  'reports.list',
  'models.list',
  'files.list',
  'downloads.prepare',
  'reports.generate',
  'reports.regenerate',
  'reports.export',
]);
/** Heavy requests worked on at once: about what two cores can read and parse side by side. */
export const MAX_HEAVY_AT_ONCE = 4;
/**
 * Refusals (not JSON, a bad request, over a limit) one connection may have that its socket has not written out;
 * a message past them closes the connection (1008). Without a bound, 7-byte frames of "x" from a client that
 * never read queued a refusal each: 10 MB sent took the server to 1.7 GiB and the refusals' bytes shut every
 * other window out of the shared answer budget (re-attack 13). About 150 bytes each: 32 clients' worth is 5 MB.
 */
export const MAX_REFUSALS_WAITING = 1024;
/**
 * Refusals one connection may draw in REFUSAL_WINDOW_MS: a page of ours draws none or a few (a burst over the
 * in-flight limit), a client that sends junk as fast as it can is closed (1008) within moments, before it has
 * kept the server busy for long: counting only the refusals waiting unread let 30 such clients keep it busy
 * for 40 s while the kernel's buffers took theirs (re-attack 14).
 */
export const MAX_REFUSALS_PER_WINDOW = 256;
/**
 * Bytes of refused messages one connection may send in REFUSAL_WINDOW_MS: each is parsed whole before it is
 * refused, so 31 connections each just under the count, with messages of 256 KiB of JSON that is no request, held
 * the server at a full core and every other window's answer at a second (re-attack 16).
 */
export const MAX_REFUSED_BYTES_PER_WINDOW = 4 * 1024 * 1024;
/**
 * Bytes of all messages one connection may send in REFUSAL_WINDOW_MS, answered or not. A page's largest is a report
 * saved from the editor (MAX_REPORT_MARKDOWN_CHARS, about 2 MB), sent when a person presses Save.
 */
export const MAX_MESSAGE_BYTES_PER_WINDOW = 32 * 1024 * 1024;
/**
 * Bytes of the requests one connection has sent that are not yet worked through (waiting for a slot or running);
 * its first is always taken. Bounding only the rate, 31 connections each sending 1.9 MB report saves faster than
 * one queue wrote them held 3.6 GiB (re-attack 19). A page's largest is one such save.
 */
export const MAX_HELD_BYTES_PER_CONNECTION = 8 * 1024 * 1024;
/** The same over every connection together; a connection holding nothing still has its one request taken. */
export const MAX_HELD_BYTES = 64 * 1024 * 1024;
const REFUSAL_WINDOW_MS = 10_000;

const formatMiB = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

export interface WsApiOptions {
  server: Server;
  services: Services;
  token: string;
  /** Host names a page of this server may be reached under (auth.allowedHostNames). */
  allowedHosts: ReadonlySet<string>;
  log: (line: string) => void;
  maxBufferedBytes?: number;
  maxInFlight?: number;
  maxInFlightTotal?: number;
  maxClients?: number;
  answerStallMs?: number;
  maxWaitingAnswerBytes?: number;
}

/**
 * The path and query of a request target, without `new URL` (which throws on
 * targets such as "//"): anything a client sends yields an answer, never an exception.
 */
export function splitTarget(target: string | undefined): { pathname: string; query: URLSearchParams } {
  const raw = target ?? '/';
  const q = raw.indexOf('?');
  return { pathname: q < 0 ? raw : raw.slice(0, q), query: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)) };
}

/** Why an upgrade request is refused, or null when it is accepted. */
export function refuseReason(req: IncomingMessage, token: string, allowedHosts: ReadonlySet<string>): string | null {
  const { pathname, query } = splitTarget(req.url);
  if (pathname !== WS_PATH) return 'unknown path';
  if (!tokensEqual(token, query.get(TOKEN_QUERY_PARAM))) return 'missing or wrong token';
  if (!isAllowedOrigin(req.headers.origin, req.headers.host, allowedHosts)) return 'origin not allowed';
  return null;
}

function peer(req: IncomingMessage): string {
  return `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? '?'}`;
}

/** How long a refused upgrade's peer has to read the answer before its connection is closed whatever it does. */
const REFUSED_LINGER_MS = 1_000;

function refuse(socket: Duplex, reason: string, status = '403 Forbidden'): void {
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${reason}\n`);
  // end() only half-closes: a peer that never closes its side held 512 refused connections open (re-attack 17).
  setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
}

/**
 * The WebSocket transport: requests are validated and dispatched, events are
 * pushed. Every path a network peer can drive runs under an error handler: a
 * bad request, a protocol error or a slow reader costs that connection at most.
 */
export function attachWsApi(options: WsApiOptions): WebSocketServer {
  const { server, services, token, allowedHosts, log } = options;
  const maxBuffered = options.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
  const stallMs = options.answerStallMs ?? ANSWER_STALL_MS;
  // Well below the drop limit, so answers in their turn never come near it (tests make that limit small).
  const highWater = Math.min(ANSWER_HIGH_WATER_BYTES, maxBuffered / 4);
  const maxInFlight = options.maxInFlight ?? MAX_IN_FLIGHT;
  const maxClients = options.maxClients ?? MAX_CLIENTS;
  const total = options.maxInFlightTotal ?? MAX_IN_FLIGHT_TOTAL;
  // One connection runs at most a quarter of them at once, and an eighth wait for a connection with nothing running.
  const slots = new FairSlots(total, { perOwner: Math.max(1, Math.floor(total / 4)), reserve: Math.floor(total / 8) });
  const heavy = new FairSlots(MAX_HEAVY_AT_ONCE, { perOwner: 2, reserve: 1 });
  const shared = new SharedReads(heavy, (method) => services.router.dispatch(method, {}));
  const heldAll = { bytes: 0 };
  // Every connection's events from one subscription: each event is made JSON once and its text shared by every
  // outbox (30 clients that never read each held their own copies of a training run's events, 1.4 GiB; re-attack 15).
  const outboxes = new Set<Outbox>();
  const unsubscribe = services.events.subscribe((event, data) => {
    if (outboxes.size === 0) return;
    let text: string;
    try {
      text = JSON.stringify({ type: 'event', event, data });
    } catch (err) {
      log(`could not send the event ${event}: ${(err as Error).message}`);
      return;
    }
    for (const outbox of outboxes) outbox.eventText(text);
  });
  const budget = { bytes: 0, max: options.maxWaitingAnswerBytes ?? MAX_WAITING_ANSWER_BYTES };
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });

  // Lines any peer can cause, one per connection it opens: a few are kept, the rest counted.
  const peerLog = limitedLog(log, 'lines about connections');
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Read now: once the socket is gone its address is too ("?:?").
    const who = peer(req);
    // Node takes its own error handler off a socket it hands to 'upgrade'; a reset would otherwise be uncaught.
    socket.on('error', (err) => peerLog(`connection from ${who}: ${err.message}`));
    try {
      const reason = refuseReason(req, token, allowedHosts);
      if (reason) {
        refuse(socket, reason);
        return;
      }
      if (wss.clients.size >= maxClients) {
        peerLog(`refused a connection from ${who}: ${maxClients} clients are connected already`);
        refuse(socket, `too many connections (${maxClients})`, '503 Service Unavailable');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    } catch (err) {
      peerLog(`refused an upgrade from ${who}: ${(err as Error).message}`);
      socket.destroy();
    }
  });

  wss.on('connection', (ws: WebSocket, req: IncomingMessage) => {
    const who = peer(req);
    const outbox = new Outbox(ws, { maxBuffered, highWater, stallMs, log, who, budget });
    outboxes.add(outbox);
    ws.on('close', () => {
      outboxes.delete(outbox);
      slots.drop(outbox);
      heavy.drop(outbox);
      outbox.close();
      // Its requests dropped while waiting never finish: what they held is given back here, once.
      inFlight.closed = true;
      heldAll.bytes -= inFlight.held;
      inFlight.held = 0;
    });
    // ws closes the connection itself (1007 bad UTF-8, 1009 too big, 1002 bad frame); without a listener it would throw.
    ws.on('error', (err) => log(`closed client ${who} after a protocol error: ${err.message}`));
    outbox.event({ type: 'event', event: 'engine.status', data: services.engine.status() });

    const inFlight: InFlight = { count: 0, max: maxInFlight, slots, heavy, shared, refusals: 0, held: 0, heldAll, closed: false, recent: { since: Date.now(), count: 0, bytes: 0, allBytes: 0 } };
    ws.on('message', (raw) => {
      if (ws.readyState !== ws.OPEN) return; // closing: what it still sends is not read
      try {
        const now = Date.now();
        if (now - inFlight.recent.since > REFUSAL_WINDOW_MS) inFlight.recent = { since: now, count: 0, bytes: 0, allBytes: 0 };
        const tooMany =
          inFlight.refusals >= MAX_REFUSALS_WAITING
            ? `${MAX_REFUSALS_WAITING} refusals of its messages wait unread`
            : inFlight.recent.count >= MAX_REFUSALS_PER_WINDOW
              ? `${MAX_REFUSALS_PER_WINDOW} of its messages were refused within ${REFUSAL_WINDOW_MS / 1000} s`
              : inFlight.recent.bytes >= MAX_REFUSED_BYTES_PER_WINDOW
                ? `${formatMiB(inFlight.recent.bytes)} of its messages were refused or failed within ${REFUSAL_WINDOW_MS / 1000} s`
                : inFlight.recent.allBytes >= MAX_MESSAGE_BYTES_PER_WINDOW
                  ? `it sent ${formatMiB(inFlight.recent.allBytes)} of messages within ${REFUSAL_WINDOW_MS / 1000} s`
                  : null;
        if (tooMany) {
          log(`closed client ${who}: ${tooMany}`);
          // The close frame tells a client that reads why (at most 123 bytes); one that does not read is cut off a moment later.
          ws.close(1008, tooMany.slice(0, 123));
          setTimeout(() => ws.terminate(), 1000).unref();
          return;
        }
        // Bytes as sent, not UTF-16 units: 3-byte characters passed the caps three times over (re-attack 19).
        const bytes = Buffer.isBuffer(raw) ? raw.length : Array.isArray(raw) ? raw.reduce((n, b) => n + b.length, 0) : raw.byteLength;
        inFlight.recent.allBytes += bytes;
        handleMessage(raw.toString(), bytes, services, outbox, inFlight);
      } catch (err) {
        log(`message from ${who} failed: ${(err as Error).message}`);
      }
    });
  });
  wss.on('close', unsubscribe);
  return wss;
}

interface InFlight {
  count: number;
  max: number;
  /** The server's, shared by every connection in turn. */
  slots: FairSlots;
  /** The slots of HEAVY_METHODS, shared the same way. */
  heavy: FairSlots;
  /** Reads every caller shares (SHARED_READ_METHODS). */
  shared: SharedReads;
  /** Bytes of its requests not yet worked through, and of every connection's (MAX_HELD_BYTES_PER_CONNECTION, MAX_HELD_BYTES). */
  held: number;
  heldAll: { bytes: number };
  /** It has gone: what its requests held was given back at once. */
  closed: boolean;
  /** Refusals its socket has not written out yet (MAX_REFUSALS_WAITING bounds them). */
  refusals: number;
  /**
   * Since `since`: refusals drawn, the bytes of the messages refused or failed, and of all messages
   * (MAX_REFUSALS_PER_WINDOW, MAX_REFUSED_BYTES_PER_WINDOW, MAX_MESSAGE_BYTES_PER_WINDOW).
   */
  recent: { since: number; count: number; bytes: number; allBytes: number };
}

function handleMessage(text: string, bytes: number, services: Services, outbox: Outbox, inFlight: InFlight): void {
  // A refusal holds no request slot, but is counted until its socket has written it out: counted only until it
  // was handed to the socket, 30 clients that never read queued tens of thousands each (4 MiB and the kernel's
  // buffers) and held the server at 1 GiB for 40 s (re-attack 14).
  const send = (msg: ServerMessage) => {
    inFlight.refusals++;
    inFlight.recent.count++;
    inFlight.recent.bytes += bytes;
    outbox.answer(msg, () => undefined, { refusal: true, written: () => inFlight.refusals-- });
  };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    send({ type: 'response', id: 0, ok: false, error: { code: 'E_BAD_REQUEST', message: 'message is not JSON' } });
    return;
  }
  const parsed = RequestMessageSchema.safeParse(json);
  if (!parsed.success) {
    const id = typeof (json as { id?: unknown })?.id === 'number' ? (json as { id: number }).id : 0;
    const message = `bad request message: ${formatIssues(parsed.error, 'message')}`;
    send({ type: 'response', id, ok: false, error: new ApiError('E_BAD_REQUEST', message).toPayload() });
    return;
  }
  const { id, method, params } = parsed.data;
  // A method the contract lacks is refused here, as junk is (counted, no slot): 24 connections sending 4 MiB
  // requests to no method kept every other window's answer at a second (re-attack 17).
  if (!isMethodName(method)) {
    send({ type: 'response', id, ok: false, error: new ApiError('E_UNKNOWN_METHOD', `unknown method ${JSON.stringify(method)}`).toPayload() });
    return;
  }
  if (inFlight.count >= inFlight.max) {
    const message = `${inFlight.max} requests are in flight on this connection already; wait for their answers`;
    send({ type: 'response', id, ok: false, error: new ApiError('E_BAD_REQUEST', message).toPayload() });
    return;
  }
  const sharedRead = SHARED_READ_METHODS.has(method) && asksNothing(params);
  if (!sharedRead && inFlight.held > 0 && (inFlight.held + bytes > MAX_HELD_BYTES_PER_CONNECTION || inFlight.heldAll.bytes + bytes > MAX_HELD_BYTES)) {
    const mine = inFlight.held + bytes > MAX_HELD_BYTES_PER_CONNECTION;
    const message = mine
      ? `this connection's requests not yet worked through hold ${formatMiB(inFlight.held)} (at most ${formatMiB(MAX_HELD_BYTES_PER_CONNECTION)}); wait for their answers`
      : `requests not yet worked through hold ${formatMiB(inFlight.heldAll.bytes)} over all connections (at most ${formatMiB(MAX_HELD_BYTES)}); wait for this connection's answers`;
    send({ type: 'response', id, ok: false, error: new ApiError('E_BAD_REQUEST', message).toPayload() });
    return;
  }
  // The connection's slot is held until the answer is handed to the socket (answers waiting their turn count as in
  // flight); the server's, shared in turn with the other connections (FairSlots), while the work runs.
  inFlight.count++;
  const sent = () => inFlight.count--;
  const answered = (result: unknown) => outbox.answer({ type: 'response', id, ok: true, result }, sent);
  const failed = (err: unknown) => {
    const error = toApiError(err);
    // Params the contract refuses count as a refusal too: a page of ours sends none.
    if (error.code === 'E_BAD_REQUEST') inFlight.recent.count++;
    // Any failed request's bytes count with the refused ones: each was parsed whole for nothing. Counting only
    // refusals let 24 connections send 4 MiB folder names to files.list at 9 MiB/s each (re-attack 18).
    inFlight.recent.bytes += bytes;
    outbox.answer({ type: 'response', id, ok: false, error: error.toPayload(services.workspace.root) }, sent);
  };
  if (sharedRead) {
    void inFlight.shared.get(method).then((json) => outbox.answerJson(id, json, sent), failed);
    return;
  }
  inFlight.held += bytes;
  inFlight.heldAll.bytes += bytes;
  const pool = HEAVY_METHODS.has(method) ? inFlight.heavy : inFlight.slots;
  pool.take(outbox, () => {
    void services.router
      .dispatch(method, params, outbox)
      .then(answered, failed)
      .finally(() => {
        pool.release(outbox);
        if (inFlight.closed) return;
        inFlight.held -= bytes;
        inFlight.heldAll.bytes -= bytes;
      });
  });
}
