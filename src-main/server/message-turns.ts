/**
 * The messages of every WebSocket connection, worked on at most `perSecond` a second over all of them (a burst of
 * `burst` at once), one connection's after another's when they must wait. A connection with messages waiting is
 * paused (its socket not read), so what waits is bounded by what its last read brought; it is read again once its
 * messages are worked through.
 *
 * Why over all connections: each connection's own bounds start afresh when it is closed and opened again, so a
 * client reopening its connections answered 69,000 messages a second (re-attack 21); capping the opens instead let
 * one such client refuse every new window (re-attack 22). Taken in turn, a new window's messages wait for at most
 * one of each other connection's.
 */
export class MessageTurns<M> {
  private tokens: number;
  private refilledAt: number;
  /** Connections with messages waiting, in the order of their next turn. */
  private readonly ring: Turn<M>[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.refilledAt = now();
  }

  /** A connection's place: `work` takes each of its messages in its turn; `pause`/`resume` stop and start reading it. */
  open(work: (message: M) => void, pause: () => void, resume: () => void): Turn<M> {
    return new Turn(this, work, pause, resume);
  }

  /** @internal A message of `turn`: worked on now when nothing of its waits and the budget allows, else queued. */
  offer(turn: Turn<M>, message: M): void {
    if (turn.closed) return;
    if (!turn.waiting && this.take()) {
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
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.refilledAt) * this.perSecond) / 1000);
    this.refilledAt = t;
  }

  private take(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens--;
    return true;
  }

  private schedule(): void {
    if (this.timer || this.ring.length === 0) return;
    const wait = Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.perSecond));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.turns();
    }, wait);
    this.timer.unref();
  }

  /** One message of each waiting connection in turn, for as long as the budget lasts. */
  private turns(): void {
    while (this.ring.length > 0 && this.take()) {
      const turn = this.ring.shift()!;
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
