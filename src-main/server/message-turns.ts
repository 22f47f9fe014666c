/**
 * The messages of every WebSocket connection, worked on at most `rate.messages` a second and `rate.bytes` bytes a
 * second over all of them (a second's worth at once), one connection's after another's when they must wait. A
 * connection with messages waiting is paused (its socket not read), so what waits is bounded by what its last read
 * brought; it is read again once its messages are worked through.
 *
 * Why over all connections: each connection's own bounds start afresh when it is closed and opened again, so a
 * client reopening its connections answered 69,000 messages a second (re-attack 21); capping the opens instead let
 * one such client refuse every new window (re-attack 22). Taken in turn, a new window's messages wait for at most
 * one of each other connection's. Bytes too: a 16 MiB message cost one turn like a 10-byte one, and one client
 * reopening to send one per connection kept every list waiting over 30 s (re-attack 23).
 */
export class MessageTurns<M> {
  private tokens: { messages: number; bytes: number };
  private refilledAt: number;
  /** Connections with messages waiting, in the order of their next turn. */
  private readonly ring: Turn<M>[] = [];
  private timer: { handle: NodeJS.Timeout; at: number } | null = null;

  /**
   * `bytesOf`: what a message weighs in the byte budget; `rate.freeBytes`: a message of at most this weight needs none of
   * it (a page's every one but a report save).
   */
  constructor(
    private readonly rate: { messages: number; bytes: number; freeBytes: number },
    private readonly bytesOf: (message: M) => number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = { messages: rate.messages, bytes: rate.bytes };
    this.refilledAt = now();
  }

  /** A connection's place: `work` takes each of its messages in its turn; `pause`/`resume` stop and start reading it. */
  open(work: (message: M) => void, pause: () => void, resume: () => void): Turn<M> {
    return new Turn(this, work, pause, resume);
  }

  /** @internal A message of `turn`: worked on now when nothing of its waits and the budget allows, else queued. */
  offer(turn: Turn<M>, message: M): void {
    if (turn.closed) return;
    // A large message never goes before one that waits for the budget already (re-attack 24: a 2 MB save waited
    // 27 s while 65 KiB messages of other connections took the budget as soon as it came back).
    if (!turn.waiting && !(this.due(message) > 0 && this.largeWaits()) && this.take(message)) {
      turn.work(message);
      return;
    }
    turn.queue.push(message);
    if (!turn.waiting) {
      turn.waiting = true;
      turn.pause();
      this.ring.push(turn);
    }
    this.schedule();
  }

  /** @internal */
  drop(turn: Turn<M>): void {
    turn.closed = true;
    turn.queue.length = 0;
    const at = this.ring.indexOf(turn);
    if (at >= 0) this.ring.splice(at, 1);
  }

  private refill(): void {
    const t = this.now();
    const seconds = (t - this.refilledAt) / 1000;
    this.tokens = {
      messages: Math.min(this.rate.messages, this.tokens.messages + seconds * this.rate.messages),
      bytes: Math.min(this.rate.bytes, this.tokens.bytes + seconds * this.rate.bytes),
    };
    this.refilledAt = t;
  }

  /** Bytes of the budget a message needs before it goes: none for a small one, at most a second's for a large one. */
  private due(message: M): number {
    const bytes = this.bytesOf(message);
    return bytes <= this.rate.freeBytes ? 0 : Math.min(bytes, this.rate.bytes);
  }

  /** Seconds until `message` could go. */
  private wait(message: M): number {
    const due = this.due(message);
    // A small message waits for no bytes, however far below 0 large ones have taken the budget.
    return Math.max((1 - this.tokens.messages) / this.rate.messages, due > 0 ? (due - this.tokens.bytes) / this.rate.bytes : 0, 0);
  }

  /** A large message that goes is charged all its bytes (the budget may go below 0), so large ones keep to the rate. */
  private take(message: M): boolean {
    this.refill();
    if (this.wait(message) > 0) return false;
    this.tokens.messages--;
    if (this.due(message) > 0) this.tokens.bytes -= this.bytesOf(message);
    return true;
  }

  /** Wakes when the first waiting message that may go next could: sooner than a wake-up set for a later one. */
  private schedule(): void {
    if (this.ring.length === 0) return;
    // A large one behind another large one may not go next: timed by it, the loop woke every millisecond for nothing.
    let seconds = Infinity;
    let largeSeen = false;
    for (const turn of this.ring) {
      const large = this.due(turn.queue[0]) > 0;
      if (large && largeSeen) continue;
      largeSeen ||= large;
      seconds = Math.min(seconds, this.wait(turn.queue[0]));
    }
    const ms = Math.max(1, Math.ceil(seconds * 1000));
    const at = this.now() + ms;
    // A small message waiting for a message's token must not wait for a wake-up set for a large one's bytes.
    if (this.timer && this.timer.at <= at) return;
    if (this.timer) clearTimeout(this.timer.handle);
    const handle = setTimeout(() => {
      this.timer = null;
      this.turns();
    }, ms);
    handle.unref();
    this.timer = { handle, at };
  }

  /**
   * One message of each waiting connection in turn, for as long as the budget lasts. A large message waiting for bytes
   * is passed over, keeping its place, so the small ones of the others go on (made to wait for bytes too, a page's
   * app.info waited up to 7.8 s behind four clients of 16 MiB messages).
   */
  private turns(): void {
    for (let i = this.firstReady(); i >= 0; i = this.firstReady()) {
      const [turn] = this.ring.splice(i, 1);
      const message = turn.queue.shift()!;
      if (turn.queue.length > 0) this.ring.push(turn);
      else {
        turn.waiting = false;
        turn.resume();
      }
      turn.work(message);
    }
    this.schedule();
  }

  /** The first connection in turn whose next message can go now (taking its budget), or -1; large ones in turn too. */
  private firstReady(): number {
    let largeWaits = false;
    for (let i = 0; i < this.ring.length; i++) {
      const message = this.ring[i].queue[0];
      const large = this.due(message) > 0;
      if (large && largeWaits) continue;
      if (this.take(message)) return i;
      if (this.tokens.messages < 1) return -1;
      largeWaits ||= large;
    }
    return -1;
  }

  private largeWaits(): boolean {
    return this.ring.some((turn) => this.due(turn.queue[0]) > 0);
  }
}

/** One connection's messages in MessageTurns. */
export class Turn<M> {
  readonly queue: M[] = [];
  waiting = false;
  closed = false;

  constructor(
    private readonly turns: MessageTurns<M>,
    readonly work: (message: M) => void,
    readonly pause: () => void,
    readonly resume: () => void,
  ) {}

  /** Its next message, worked on in its turn. */
  offer(message: M): void {
    this.turns.offer(this, message);
  }

  /** It has gone: what it had waiting is dropped and its turns end. */
  close(): void {
    this.turns.drop(this);
  }
}
