/**
 * What each WebSocket connection has sent of a message not yet whole: the reads and bytes since its last message.
 * Two decisions use it: a connection whose message comes in too many pieces is closed (ws keeps every read of an
 * unfinished message), and at the connection limit a new window takes the place of one that has never sent a whole
 * message: the one with the most bytes of its first, else the oldest.
 *
 * Why a place is taken, not refused: a connection the ingress meter has paused is not read, so it sees its client
 * leave only once the bytes before the client's FIN have been read, a read per debt period. 29 clients that each
 * wrote 1 MiB of a 16 MiB frame, left and came back kept the 32 places full of gone connections, and a new window
 * was refused 503 in 13 tries of 14 (re-attack 26). Those paused as they opened, before any read, had nothing
 * unfinished: one that has sent no whole message in its first `silentMs` gives its place too.
 *
 * Never a connection that has sent a whole message: a window sends its first request as it opens, and giving up the
 * connection with the most of any unfinished message closed a window in the middle of a 2 MB save, read in pieces
 * while 31 connections kept their own messages under 64 KiB, whose places it then could not get back (re-attack 27).
 */
export class UnfinishedMessages {
  private readonly open = new Set<UnfinishedMessage>();
  /** Connections given up for a new one that have not closed yet: they still count among the server's clients. */
  private leaving = 0;

  constructor(
    private readonly minBytes: number,
    private readonly silentMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A connection's count; `leave` closes it when its place is taken. */
  track(leave: () => void): UnfinishedMessage {
    const message = new UnfinishedMessage(leave, this.now());
    this.open.add(message);
    return message;
  }

  /** Clients that still hold a place: `clients` open, less those already given up. */
  holding(clients: number): number {
    return clients - this.leaving;
  }

  /**
   * Gives up, for a new connection, one that has sent no whole message since it opened: the one with the most bytes
   * of its first (at least `minBytes`), or else the oldest, opened `silentMs` ago or more. Which one, in words, or
   * null when there is none (every place is then held by connections that have sent a whole message).
   */
  giveUp(): string | null {
    const silentSince = this.now() - this.silentMs;
    let heaviest: UnfinishedMessage | null = null;
    let silent: UnfinishedMessage | null = null;
    for (const m of this.open) {
      if (m.wholeOnce) continue;
      if (m.bytes >= this.minBytes && (!heaviest || m.bytes > heaviest.bytes)) heaviest = m;
      // Insertion order is age: the first silent one found is the oldest.
      if (!silent && m.openedAt <= silentSince) silent = m;
    }
    const given = heaviest ?? silent;
    if (!given) return null;
    this.open.delete(given);
    given.given = true;
    this.leaving++;
    given.leave();
    return given === heaviest ? `one in the middle of its first message (${given.bytes.toLocaleString('en-US')} bytes of it read)` : 'one that had sent no whole message since it opened';
  }

  /** `message`'s connection has closed. */
  closed(message: UnfinishedMessage): void {
    this.open.delete(message);
    if (message.given) {
      message.given = false;
      this.leaving--;
    }
  }
}

/** One connection in UnfinishedMessages. */
export class UnfinishedMessage {
  reads = 0;
  bytes = 0;
  given = false;
  /** It has sent a whole message. */
  wholeOnce = false;
  private completedInRead = false;

  constructor(
    readonly leave: () => void,
    readonly openedAt: number,
  ) {}

  /**
   * A read of `bytes` from the socket, after the WebSocket has parsed it: the read that completed a message is not
   * counted (it may begin the next one: counted short by at most a read).
   */
  read(bytes: number): void {
    if (this.completedInRead) {
      this.completedInRead = false;
      return;
    }
    this.reads++;
    this.bytes += bytes;
  }

  /** A message came in whole. */
  completed(): void {
    this.reads = 0;
    this.bytes = 0;
    this.completedInRead = true;
    this.wholeOnce = true;
  }
}
