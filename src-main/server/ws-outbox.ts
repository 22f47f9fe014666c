import type { WebSocket } from 'ws';

import { ApiError } from '../api/errors';
import type { ServerMessage } from '../api/wire';

/**
 * Answers are handed to the socket only while less than this waits unsent; the rest wait their turn (each
 * still holding its in-flight slot). 32 answers of 4 MiB sent at once passed the unsent-bytes limit, and a
 * client that was reading was dropped as one that was not (re-attack 9).
 */
export const ANSWER_HIGH_WATER_BYTES = 4 * 1024 * 1024;
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
/** Answers waiting their turn, over all connections: past it, an answer is refused with why instead of held. */
export const MAX_WAITING_ANSWER_BYTES = 64 * 1024 * 1024;

/** The server's: bytes of answers waiting in every connection's outbox. */
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
  /** Shared by every connection: what answers may hold waiting in all of them. */
  budget: WaitingBudget;
  maxAnswerBytes?: number;
}

interface Waiting {
  text: string;
  /** An answer's: frees its in-flight slot once the answer is handed to the socket (or the client is gone). */
  sent?: () => void;
  /** An answer counted in the shared budget while it waits. */
  counted?: boolean;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

function refusal(id: number, message: string): string {
  return JSON.stringify({ type: 'response', id, ok: false, error: new ApiError('E_BAD_REQUEST', message).toPayload() });
}

/**
 * One connection's messages out, in the order they were made: handed to the socket while it holds less than the
 * high-water mark, else queued (an event behind an answer waits too, so a page never hears of a step before the
 * answer that came first). Events count toward the drop limit, waiting or not; answers are bounded by the
 * requests in flight instead. A client that drains nothing for stallMs while messages wait is dropped.
 */
export class Outbox {
  private readonly waiting: Waiting[] = [];
  private waitingEventBytes = 0;
  private retry: NodeJS.Timeout | null = null;
  private stall = { since: 0, unsent: 0 };
  private dropped = false;

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
    if (this.ws.bufferedAmount + this.waitingEventBytes + text.length > this.o.maxBuffered) {
      this.drop(`${((this.ws.bufferedAmount + this.waitingEventBytes) / 2 ** 20).toFixed(1)} MiB unsent`);
      return;
    }
    this.waitingEventBytes += text.length;
    this.waiting.push({ text });
    this.pump();
  }

  /** A response; `sent` runs once it is on the socket or the client is gone. */
  answer(msg: ServerMessage, sent: () => void): void {
    if (this.gone()) {
      sent();
      return;
    }
    let text = this.serialised(msg);
    const id = msg.type === 'response' ? msg.id : 0;
    const max = this.o.maxAnswerBytes ?? MAX_ANSWER_BYTES;
    if (text.length > max) text = refusal(id, `the answer is ${mib(text.length)} as JSON, more than the ${mib(max)} one answer may be`);
    // It waits if anything waits or the socket is full: then it counts against what all connections may hold.
    const waits = this.waiting.length > 0 || this.ws.bufferedAmount >= this.o.highWater;
    if (waits && this.o.budget.bytes + text.length > this.o.budget.max) {
      text = refusal(id, `the server holds ${mib(this.o.budget.bytes)} of answers its clients have not read yet: ask again once this page has read its answers`);
    }
    if (waits) this.o.budget.bytes += text.length;
    this.waiting.push({ text, sent, counted: waits });
    this.pump();
  }

  /** The connection closed: whatever waits is let go. */
  close(): void {
    this.dropped = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.release();
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
      if (!w.sent) this.waitingEventBytes -= w.text.length;
      if (w.counted) this.o.budget.bytes -= w.text.length;
      try {
        this.ws.send(w.text);
      } catch (err) {
        this.o.log(`could not send to ${this.o.who}: ${(err as Error).message}`);
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
    this.release();
  }

  private release(): void {
    for (const w of this.waiting.splice(0)) {
      if (w.counted) this.o.budget.bytes -= w.text.length;
      w.sent?.();
    }
    this.waitingEventBytes = 0;
  }
}
