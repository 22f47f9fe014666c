import type { MethodName } from '../api/methods';
import { PAGE_CALLS_IN_FLIGHT } from '../api/wire';
import type { FairSlots } from '../core/common/fair-slots';
import type { SharedReads } from './shared-reads';

// What one WebSocket connection (and all of them) may send, hold and have waiting: each bound names the attack
// that set it (docs/adr/0003-serve-mode-security.md).

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
/**
 * The same over every connection together, for requests over SMALL_REQUEST_BYTES from a connection that holds some
 * already. A small request is not what it protects: charged to every request, 31 connections each holding one 5.7 MB
 * save (always taken) had another window's every app.info refused (re-attack 20).
 */
export const MAX_HELD_BYTES = 64 * 1024 * 1024;
export const SMALL_REQUEST_BYTES = 64 * 1024;
/**
 * Messages one connection may send in REFUSAL_WINDOW_MS: a page sends a few a second (its transport keeps at most
 * PAGE_CALLS_IN_FLIGHT on the wire; a Benchmarks page opens its runs, tens). Without a bound, 4 connections answered
 * 80,000 valid app.info a second and every walk of the workspace waited behind them: a page's lists took 4 s, 26 s
 * with 31 connections (re-attack 20).
 */
export const MAX_MESSAGES_PER_WINDOW = 1_000;
/**
 * Messages worked on in a second over every connection (and at most as many at once), each connection's in turn
 * (message-turns.ts): a window sends a few a second, a page opening tens of runs a burst of tens. Each
 * connection's own bounds start afresh when it is reopened: 4 connections reopened 309 times in 13 s and answered
 * 69,000 app.info a second (re-attack 21); a cap on opens instead let one client refuse every new window (re-attack 22).
 */
export const MESSAGES_PER_SECOND = 500;
/**
 * Bytes of messages over SMALL_REQUEST_BYTES (values weighed in, VALUE_WEIGHT_BYTES) worked on in a second over every
 * connection, in the same turns (a larger message waits for a second's and is charged all of it): a page's largest,
 * a 2 MB report save, goes at once. Counted only in messages, one client reopening to send a 16 MiB message per
 * connection kept every list waiting over 30 s (re-attack 23).
 */
export const MESSAGE_BYTES_PER_SECOND = 8 * 1024 * 1024;
/**
 * Bytes read from every WebSocket together in a second, before they are messages (ingress-meter.ts), with a message of
 * MAX_MESSAGE_BYTES read at once: twice what the turns work on, so the turns set the pace of real work. Unmetered, a
 * client writing 16 MiB frames and closing before their turn had 370 MiB a second read (re-attack 25).
 */
export const INGRESS_BYTES_PER_SECOND = 16 * 1024 * 1024;
/**
 * What a read costs the ingress meter at least, whatever it brought: a read's own work is the cost of a tiny one.
 * Charged by its bytes, 30 connections writing 1 byte at a time (200,000 reads a second) held a core (re-attack 26).
 */
export const MIN_READ_CHARGE_BYTES = 1024;
/**
 * Reads one message may arrive in: a MAX_MESSAGE_BYTES message in reads of 1 KiB. ws keeps each read of a message it
 * has not yet whole, hundreds of bytes of memory for a 1-byte one: frames written 1 byte at a time grew the server by
 * 33 MiB a second, to 3.7 GiB (re-attack 26). A connection past it is closed.
 */
export const MAX_READS_PER_MESSAGE = 16_384;
/**
 * Bytes of its first message, still unfinished, that let a new window take a connection's place at MAX_CLIENTS: a
 * read's worth (unfinished-messages.ts; re-attack 26). A connection that has sent a whole message keeps its place.
 */
export const MIN_UNFINISHED_BYTES_TO_GIVE_UP = 64 * 1024;
/** A connection that has sent no whole message this long after it opened gives its place to a new window at MAX_CLIENTS. */
export const SILENT_MS_TO_GIVE_UP = 1000;
/**
 * JSON values a message may hold (message-shape.ts), about 5 ms to parse: a page's large message is one long string
 * (a report saved from the editor), and the request with the most values, a model spec of at most 256 KiB, holds far
 * fewer.
 */
export const MAX_VALUES_IN_MESSAGE = 65_536;
/**
 * What one JSON value weighs in the byte budget, as parsing goes: `[{},{},...]` parses about 60 times slower a byte
 * than one long string. Messages just under 64 KiB of it, free of the budget by their bytes, held a core at 500 a
 * second (re-attack 24); weighed so, they wait for it like a 1.4 MB message.
 */
export const VALUE_WEIGHT_BYTES = 64;
/**
 * Answers of the shared reads a connection may wait for at once, the four lists together: no more than a page keeps
 * on the wire. Each caller's answer is its own copy of the list: 992 of them from one walk held the event loop
 * (app.info at 0.3-1.1 s; re-attack 20), and 16 of each list from 31 connections still 0.7 s (re-attack 21).
 */
export const MAX_SHARED_WAITS = PAGE_CALLS_IN_FLIGHT;
export const REFUSAL_WINDOW_MS = 10_000;

export const formatMiB = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

export interface InFlight {
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
  /** Answers of shared reads it waits for, of every method (MAX_SHARED_WAITS). */
  sharedWaits: number;
  /** Refusals its socket has not written out yet (MAX_REFUSALS_WAITING bounds them). */
  refusals: number;
  /**
   * Since `since`: refusals drawn, the bytes of the messages refused or failed, the bytes of all messages and their
   * number (MAX_REFUSALS_PER_WINDOW, MAX_REFUSED_BYTES_PER_WINDOW, MAX_MESSAGE_BYTES_PER_WINDOW, MAX_MESSAGES_PER_WINDOW).
   */
  recent: { since: number; count: number; bytes: number; allBytes: number; messages: number };
}

/** Why the connection is closed before its next message is read (1008), or null: a bound of REFUSAL_WINDOW_MS passed. */
export function overLimits(inFlight: InFlight): string | null {
  const { recent } = inFlight;
  const window = `within ${REFUSAL_WINDOW_MS / 1000} s`;
  const refused = overRefusalLimits(inFlight);
  if (refused) return refused;
  if (recent.allBytes >= MAX_MESSAGE_BYTES_PER_WINDOW) return `it sent ${formatMiB(recent.allBytes)} of messages ${window}`;
  if (recent.messages >= MAX_MESSAGES_PER_WINDOW) return `it sent ${recent.messages} messages ${window}`;
  return null;
}

/** Why the connection is closed for its refusals, or null: the part of overLimits a message's turn checks again. */
export function overRefusalLimits(inFlight: InFlight): string | null {
  const { recent } = inFlight;
  const window = `within ${REFUSAL_WINDOW_MS / 1000} s`;
  if (inFlight.refusals >= MAX_REFUSALS_WAITING) return `${MAX_REFUSALS_WAITING} refusals of its messages wait unread`;
  if (recent.count >= MAX_REFUSALS_PER_WINDOW) return `${MAX_REFUSALS_PER_WINDOW} of its messages were refused ${window}`;
  if (recent.bytes >= MAX_REFUSED_BYTES_PER_WINDOW) return `${formatMiB(recent.bytes)} of its messages were refused or failed ${window}`;
  return null;
}

/** Why a request that would hold `bytes` more is refused, or null: this connection's bound, or (for a large one) all's. */
export function heldRefusal(bytes: number, inFlight: InFlight): { message: string; counted: boolean } | null {
  if (inFlight.held === 0) return null;
  if (inFlight.held + bytes > MAX_HELD_BYTES_PER_CONNECTION) {
    const message = `this connection's requests not yet worked through hold ${formatMiB(inFlight.held)} (at most ${formatMiB(MAX_HELD_BYTES_PER_CONNECTION)}); wait for their answers`;
    return { message, counted: true };
  }
  if (bytes > SMALL_REQUEST_BYTES && inFlight.heldAll.bytes + bytes > MAX_HELD_BYTES) {
    const message = `requests not yet worked through hold ${formatMiB(inFlight.heldAll.bytes)} over all connections (at most ${formatMiB(MAX_HELD_BYTES)}); send this again once this connection's answers have come`;
    return { message, counted: false };
  }
  return null;
}

/** Why one more answer of a shared read is refused to this connection, or null. */
export function sharedRefusal(method: string, inFlight: InFlight): { message: string; counted: boolean } | null {
  if (inFlight.sharedWaits < MAX_SHARED_WAITS) return null;
  return { message: `this connection waits for ${MAX_SHARED_WAITS} answers of the lists already (${method} is one): wait for them`, counted: true };
}
