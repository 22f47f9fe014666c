import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';

import { WebSocketServer, type WebSocket } from 'ws';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import { isMethodName } from '../api/methods';
import type { ServerMessage } from '../api/wire';
import { RequestMessageSchema, TOKEN_QUERY_PARAM, WS_PATH } from '../api/wire';
import { toApiError } from '../core/api-router';
import { FairSlots } from '../core/common/fair-slots';
import type { Services } from '../core/services';
import { isAllowedOrigin, tokensEqual } from './auth';
import { ClientPlaces } from './client-places';
import { IngressMeter, readHolds } from './ingress-meter';
import { limitedLog } from './log-limit';
import { countValues } from './message-shape';
import { MessageTurns } from './message-turns';
import { UnfinishedMessages } from './unfinished-messages';
import {
  heldRefusal,
  type InFlight,
  MAX_BUFFERED_BYTES,
  MAX_CLIENTS,
  MAX_HEAVY_AT_ONCE,
  MAX_IN_FLIGHT,
  MAX_IN_FLIGHT_TOTAL,
  MAX_MESSAGE_BYTES,
  MESSAGE_BYTES_PER_SECOND,
  MESSAGES_PER_SECOND,
  MAX_VALUES_IN_MESSAGE,
  VALUE_WEIGHT_BYTES,
  SMALL_REQUEST_BYTES,
  overLimits,
  overRefusalLimits,
  REFUSAL_WINDOW_MS,
  sharedRefusal,
  HEAVY_METHODS,
  INGRESS_BYTES_PER_SECOND,
  MAX_READS_PER_MESSAGE,
  MIN_READ_CHARGE_BYTES,
  MIN_UNFINISHED_BYTES_TO_GIVE_UP,
  SILENT_MS_TO_GIVE_UP,
} from './ws-limits';
import { asksNothing, SHARED_READ_METHODS, SharedReads } from './shared-reads';
import { ANSWER_HIGH_WATER_BYTES, ANSWER_STALL_MS, MAX_WAITING_ANSWER_BYTES, Outbox } from './ws-outbox';

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
  messageRate?: { messages: number; bytes: number; freeBytes: number };
  ingressRate?: { bytes: number; burst: number; minRead: number };
  maxReadsPerMessage?: number;
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
  // One at a time per connection: one connection keeping two 30 MB event parses running slowed every walk (re-attack 21).
  const heavy = new FairSlots(MAX_HEAVY_AT_ONCE, { perOwner: 1, reserve: 1 });
  // The page lists, walked once for all who ask, in slots of their own: waiting their turn among the heavy methods,
  // 31 connections of runs.get kept another window's lists 5.6-6.5 s (re-attack 20). One walk of each at a time.
  const shared = new SharedReads(new FairSlots(2, { perOwner: 1 }), (method) => services.router.dispatch(method, {}));
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
  // Every connection's messages in turn, at most MESSAGES_PER_SECOND over all (message-turns.ts).
  // A message weighs its bytes and its values (message-shape.ts): what parsing it costs.
  const turns = new MessageTurns<Arrived>(
    options.messageRate ?? { messages: MESSAGES_PER_SECOND, bytes: MESSAGE_BYTES_PER_SECOND, freeBytes: SMALL_REQUEST_BYTES },
    (m) => m.bytes + m.values * VALUE_WEIGHT_BYTES,
  );
  // Bytes read from all sockets, at most INGRESS_BYTES_PER_SECOND (ingress-meter.ts): before they are messages.
  const ingress = new IngressMeter(options.ingressRate ?? { bytes: INGRESS_BYTES_PER_SECOND, burst: MAX_MESSAGE_BYTES, minRead: MIN_READ_CHARGE_BYTES });
  const maxReads = options.maxReadsPerMessage ?? MAX_READS_PER_MESSAGE;
  // Reads of each connection's unfinished message (unfinished-messages.ts): too many close it; at the connection
  // limit, one that has never sent a whole message gives its place to a new one (client-places.ts).
  const unfinished = new UnfinishedMessages(MIN_UNFINISHED_BYTES_TO_GIVE_UP, SILENT_MS_TO_GIVE_UP);
  const places = new ClientPlaces(maxClients, () => wss.clients.size, unfinished, peerLog);
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
      if (!places.claim(who)) {
        peerLog(`refused a connection from ${who}: ${maxClients} clients are connected already`);
        refuse(socket, `too many connections (${maxClients})`, '503 Service Unavailable');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req, socket));
    } catch (err) {
      peerLog(`refused an upgrade from ${who}: ${(err as Error).message}`);
      socket.destroy();
    }
  });

  wss.on('connection', (ws: WebSocket, req: IncomingMessage, socket: Duplex) => {
    const who = peer(req);
    const hold = readHolds(
      () => ws.pause(),
      () => ws.resume(),
    );
    const reader = ingress.open(
      () => hold('bytes', true),
      () => hold('bytes', false),
    );
    const message = unfinished.track(() => {
      log(`closed client ${who}: a new window took its place (it had sent no whole message)`);
      ws.terminate();
    });
    // After ws's own listener: a read is charged once ws has taken it (and a message it completed has reset the count).
    socket.on('data', (chunk: Buffer) => {
      reader.read(chunk.length);
      message.read(chunk.length);
      if (message.reads === maxReads + 1) {
        const why = `a message came in more than ${maxReads.toLocaleString('en-US')} pieces`;
        log(`closed client ${who}: ${why}`);
        ws.close(1008, why);
        setTimeout(() => ws.terminate(), 1000).unref();
      }
    });
    const outbox = new Outbox(ws, { maxBuffered, highWater, stallMs, log, who, budget });
    outboxes.add(outbox);
    // Checked as a message arrives and again in its turn: the refusals of messages that waited count only then, and
    // 999 queued messages once drew 999 refusals where 256 close the connection (re-attack 23).
    // (In its turn only the refusals' limits: the message itself was counted toward the others as it arrived.)
    const closedOverLimits = (inTurn: boolean): boolean => {
      const now = Date.now();
      if (now - inFlight.recent.since > REFUSAL_WINDOW_MS) inFlight.recent = { since: now, count: 0, bytes: 0, allBytes: 0, messages: 0 };
      const tooMany = inTurn ? overRefusalLimits(inFlight) : overLimits(inFlight);
      if (!tooMany) return false;
      log(`closed client ${who}: ${tooMany}`);
      // The close frame tells a client that reads why (at most 123 bytes); one that does not read is cut off a moment later.
      ws.close(1008, tooMany.slice(0, 123));
      setTimeout(() => ws.terminate(), 1000).unref();
      return true;
    };
    const turn = turns.open(
      (arrived) => {
        if (ws.readyState !== ws.OPEN || closedOverLimits(true)) return;
        try {
          handleMessage(arrived, services, outbox, inFlight);
        } catch (err) {
          log(`message from ${who} failed: ${(err as Error).message}`);
        }
      },
      () => hold('turns', true),
      () => hold('turns', false),
    );
    ws.on('close', () => {
      turn.close();
      reader.close();
      unfinished.closed(message);
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

    const inFlight: InFlight = { count: 0, max: maxInFlight, slots, heavy, shared, refusals: 0, held: 0, heldAll, closed: false, sharedWaits: 0, recent: { since: Date.now(), count: 0, bytes: 0, allBytes: 0, messages: 0 } };
    ws.on('message', (raw) => {
      message.completed();
      if (ws.readyState !== ws.OPEN) return; // closing: what it still sends is not read
      try {
        if (closedOverLimits(false)) return;
        // Bytes as sent, not UTF-16 units: 3-byte characters passed the caps three times over (re-attack 19).
        const data = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
        const bytes = data.length;
        inFlight.recent.allBytes += bytes;
        inFlight.recent.messages++;
        turn.offer({ data, bytes, values: countValues(data, MAX_VALUES_IN_MESSAGE + 1) });
      } catch (err) {
        log(`message from ${who} failed: ${(err as Error).message}`);
      }
    });
  });
  wss.on('close', unsubscribe);
  return wss;
}


/** A message as it arrived: its bytes, and its JSON values counted up to one past MAX_VALUES_IN_MESSAGE. */
interface Arrived {
  data: Buffer;
  bytes: number;
  values: number;
}

function handleMessage({ data, bytes, values }: Arrived, services: Services, outbox: Outbox, inFlight: InFlight): void {
  // A refusal holds no request slot, but is counted until its socket has written it out: counted only until it
  // was handed to the socket, 30 clients that never read queued tens of thousands each (4 MiB and the kernel's
  // buffers) and held the server at 1 GiB for 40 s (re-attack 14).
  // `counted`: toward the refusal limits; a refusal for what other connections hold is not this one's doing.
  const send = (msg: ServerMessage, counted = true) => {
    inFlight.refusals++;
    if (counted) {
      inFlight.recent.count++;
      inFlight.recent.bytes += bytes;
    }
    outbox.answer(msg, () => undefined, { refusal: true, written: () => inFlight.refusals-- });
  };
  if (values > MAX_VALUES_IN_MESSAGE) {
    const message = `a message may hold at most ${MAX_VALUES_IN_MESSAGE.toLocaleString('en-US')} JSON values: this one holds more, and was not read`;
    send({ type: 'response', id: 0, ok: false, error: { code: 'E_BAD_REQUEST', message } });
    return;
  }
  let json: unknown;
  try {
    json = JSON.parse(data.toString());
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
  const refused = sharedRead ? sharedRefusal(method, inFlight) : heldRefusal(bytes, inFlight);
  if (refused) {
    send({ type: 'response', id, ok: false, error: new ApiError('E_BAD_REQUEST', refused.message).toPayload() }, refused.counted);
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
    inFlight.sharedWaits++;
    void inFlight.shared
      .get(method)
      .then((json) => outbox.answerJson(id, json, sent), failed)
      .finally(() => inFlight.sharedWaits--);
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
