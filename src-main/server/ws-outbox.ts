import type { WebSocket } from 'ws';

import { ApiError } from '../api/errors';
import type { ServerMessage } from '../api/wire';

/**
 * Answers are handed to the socket only while less than this waits unsent; the rest wait their turn (each
 * still holding its in-flight slot). 32 answers of 4 MiB sent at once passed the unsent-bytes limit, and a
 * client that was reading was dropped as one that was not (re-attack 9).
 */
export const ANSWER_HIGH_WATER_BYTES = 4 * 1024 * 1024;
/**
 * What one message costs the server while it waits for its client beyond its own bytes: the queue's entry, the send's
 * callback, the stream's write request and the frame's header. Measured with ws 8 on Node 20: 60,000 events of 142
 * bytes to each of eight clients that never read grew the server by about 240 MiB, about 500 bytes a message, by
 * the socket's count 8.1 MiB of text. Counted in the drop limit, a client sent many small events is held to what the
 * limit means: eight such clients took the server to about 1.25 GB under a 32 MiB limit each.
 */
export const MESSAGE_OVERHEAD_BYTES = 512;
/** How often messages that wait their turn look at the socket again. */
const RETRY_MS = 10;
/** A client whose unsent bytes do not go down for this long while answers wait is not reading: dropped, its slots freed. */
export const ANSWER_STALL_MS = 30_000;
/**
 * The largest answer sent, as JSON: the largest real one (a run with its events, a report's figure) is a few MiB.
 * A 16 MiB figure of control bytes is 96 MB as JSON, and answers that big waiting for clients that did not read
 * ran the server out of memory (re-attack 11).
 */
export const MAX_ANSWER_BYTES = 24 * 1024 * 1024;
/**
 * Answers not yet read, over all connections: waiting their turn here or handed to a socket whose client has not
 * taken them (until the socket has written them out). Past it, an answer is refused with why instead of held: 62
 * answers of 23 MiB handed straight to the sockets of 31 clients that never read took the server to 3.3 GiB when
 * only the waiting ones were counted (re-attack 12).
 */
export const MAX_WAITING_ANSWER_BYTES = 64 * 1024 * 1024;

/** The server's: bytes of answers its clients have not taken yet, in every connection. */
export interface WaitingBudget {
  bytes: number;
  readonly max: number;
}

export interface OutboxOptions {
  /** Unsent bytes of events (on the socket and waiting here) past which the client is dropped: it is not reading. */
  maxBuffered: number;
  highWater: number;
  stallMs: number;
  log: (line: string) => void;
  who: string;
  /** Shared by every connection: what answers not yet taken by their clients may hold in all of them. */
  budget: WaitingBudget;
  maxAnswerBytes?: number;
}

interface Waiting {
  text: string;
  /** As UTF-8, what the socket will hold: what the limits count. */
  bytes: number;
  /** An answer's: frees its in-flight slot once the answer is handed to the socket (or the client is gone). */
  sent?: () => void;
  /** An answer's: counted in the shared budget until the socket has written it out or the client is gone. */
  counted?: boolean;
  /** Runs once the socket has written it out or the client is gone (a refusal's count, in ws-api). */
  written?: () => void;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

function refusal(id: number, message: string): string {
  return JSON.stringify({ type: 'response', id, ok: false, error: new ApiError('E_BAD_REQUEST', message).toPayload() });
}

/**
 * One connection's messages out, in the order they were made: handed to the socket while it holds less than the
 * high-water mark, else queued (an event behind an answer waits too, so a page never hears of a step before the
 * answer that came first). Events count toward the drop limit, waiting or not; answers count toward the shared
 * budget until written out. A client that drains nothing for stallMs while messages wait is dropped.
 */
export class Outbox {
  private readonly waiting: Waiting[] = [];
  private waitingEventBytes = 0;
  private retry: NodeJS.Timeout | null = null;
  private stall = { since: 0, unsent: 0 };
  private dropped = false;
  /** Answers handed to the socket that it has not written out yet: still counted (in the budget, or by `written`). */
  private readonly onSocket = new Set<Waiting>();
  /** Every message handed to the socket and not yet written out, each holding MESSAGE_OVERHEAD_BYTES beside its text. */
  private messagesOnSocket = 0;

  constructor(
    private readonly ws: WebSocket,
    private readonly o: OutboxOptions,
  ) {}

  event(msg: ServerMessage): void {
    if (this.gone()) return;
    let text: string;
    try {
      text = JSON.stringify(msg);
    } catch (err) {
      this.o.log(`could not send to ${this.o.who}: ${(err as Error).message}`);
      return;
    }
    this.eventText(text);
  }

  /**
   * An event already made JSON, the one string every connection's outbox holds (ws-api makes it once for all).
   */
  eventText(text: string): void {
    if (this.gone()) return;
    const bytes = Buffer.byteLength(text);
    const messages = this.messagesOnSocket + this.waiting.length;
    const held = this.ws.bufferedAmount + this.waitingEventBytes + messages * MESSAGE_OVERHEAD_BYTES;
    if (held + bytes + MESSAGE_OVERHEAD_BYTES > this.o.maxBuffered) {
      this.drop(`${mib(held)} unsent in ${messages.toLocaleString('en-US')} messages`);
      return;
    }
    this.waitingEventBytes += bytes;
    this.waiting.push({ text, bytes });
    this.pump();
  }

  /**
   * A response; `sent` runs once it is on the socket or the client is gone. An answer is counted in the shared
   * budget from now until the socket has written it out (or the client is gone), wherever it waits meanwhile.
   * A refusal (`refusal`, or an answer refused here) is not: it is small, each is bounded per connection (ws-api's
   * in-flight slots and MAX_REFUSALS_WAITING), and counted it let one client's flood of bad messages fill the
   * budget and shut every other window out (re-attack 13).
   */
  answer(msg: ServerMessage, sent: () => void, options: { refusal?: boolean; written?: () => void } = {}): void {
    if (this.gone()) {
      sent();
      options.written?.();
      return;
    }
    this.answerText(this.serialised(msg), msg.type === 'response' ? msg.id : 0, sent, options);
  }

  /** A successful answer whose result is JSON already: one read shared by many callers is made JSON once (ws-api). */
  answerJson(id: number, resultJson: string, sent: () => void): void {
    if (this.gone()) {
      sent();
      return;
    }
    this.answerText(`{"type":"response","id":${id},"ok":true,"result":${resultJson}}`, id, sent, {});
  }

  private answerText(text: string, id: number, sent: () => void, options: { refusal?: boolean; written?: () => void }): void {
    const max = this.o.maxAnswerBytes ?? MAX_ANSWER_BYTES;
    let bytes = Buffer.byteLength(text);
    let counted = options.refusal !== true;
    if (bytes > max || (counted && this.o.budget.bytes + bytes > this.o.budget.max)) {
      text =
        bytes > max
          ? refusal(id, `the answer is ${mib(bytes)} as JSON, more than the ${mib(max)} one answer may be`)
          : refusal(id, `the server holds ${mib(this.o.budget.bytes)} of answers its clients have not read yet: ask again once this page has read its answers`);
      bytes = Buffer.byteLength(text);
      counted = false;
    }
    if (counted) this.o.budget.bytes += bytes;
    this.waiting.push({ text, bytes, sent, counted, written: options.written });
    this.pump();
  }

  /** The connection closed: whatever waits is let go. */
  close(): void {
    this.dropped = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.releaseAll();
  }

  private serialised(msg: ServerMessage): string {
    try {
      return JSON.stringify(msg);
    } catch (err) {
      this.o.log(`could not send to ${this.o.who}: ${(err as Error).message}`);
      // A response that cannot be sent (too large to serialise) still answers its request, with why.
      const id = msg.type === 'response' ? msg.id : 0;
      const error = new ApiError('E_INTERNAL', `the answer could not be sent: ${(err as Error).message}`).toPayload();
      return JSON.stringify({ type: 'response', id, ok: false, error });
    }
  }

  private gone(): boolean {
    return this.dropped || this.ws.readyState !== this.ws.OPEN;
  }

  private pump = (): void => {
    this.retry = null;
    if (this.gone()) {
      this.release();
      return;
    }
    while (this.waiting.length && this.ws.bufferedAmount < this.o.highWater) {
      const w = this.waiting.shift()!;
      if (!w.sent) this.waitingEventBytes -= w.bytes;
      if (w.counted || w.written) this.onSocket.add(w);
      this.messagesOnSocket++;
      try {
        // Written out (or failed, the socket gone): no longer held for this client.
        this.ws.send(w.text, () => {
          this.messagesOnSocket--;
          if (this.onSocket.delete(w)) this.done(w);
        });
      } catch (err) {
        this.o.log(`could not send to ${this.o.who}: ${(err as Error).message}`);
        this.messagesOnSocket--;
        if (this.onSocket.delete(w)) this.done(w);
      }
      w.sent?.();
    }
    if (!this.waiting.length) {
      this.stall = { since: 0, unsent: 0 };
      return;
    }
    const now = Date.now();
    if (this.stall.since === 0 || this.ws.bufferedAmount < this.stall.unsent) this.stall = { since: now, unsent: this.ws.bufferedAmount };
    else if (now - this.stall.since > this.o.stallMs) {
      this.drop(`${(this.ws.bufferedAmount / 2 ** 20).toFixed(1)} MiB unsent for ${this.o.stallMs / 1000} s with messages waiting`);
      return;
    }
    this.retry ??= setTimeout(this.pump, RETRY_MS);
  };

  private drop(why: string): void {
    this.dropped = true;
    this.o.log(`dropped client ${this.o.who}: ${why}, it is not reading its socket`);
    this.ws.terminate();
    this.releaseAll();
  }

  private release(): void {
    for (const w of this.waiting.splice(0)) {
      this.done(w);
      w.sent?.();
    }
    this.waitingEventBytes = 0;
  }

  /** The client is gone: what waits and what its socket held are no longer held for it. */
  private releaseAll(): void {
    this.release();
    for (const w of this.onSocket) this.done(w);
    this.onSocket.clear();
  }

  /** No longer held for this client: out of the budget, and its `written` run (each once). */
  private done(w: Waiting): void {
    if (w.counted) {
      w.counted = false;
      this.o.budget.bytes -= w.bytes;
    }
    const written = w.written;
    w.written = undefined;
    written?.();
  }
}
