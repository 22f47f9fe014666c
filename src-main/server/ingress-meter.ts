/**
 * Bytes read from every WebSocket connection, at most `rate.bytes` a second over all of them (`rate.burst` at once). A
 * read that puts the meter in debt pauses its connection (its socket is not read: the client's writes wait in TCP's
 * buffers, then in the client) until the debt is paid; then every paused connection is read again, one read each
 * before the meter may pause it again, so each waits for at most one read of each other connection.
 *
 * Why at the socket: the message budget (message-turns.ts) weighs a message once it is whole, and a client that opened
 * a connection, wrote a 16 MiB frame and closed before its turn cost the server the reads, buffering and scan of each
 * one unweighed: 370 MiB a second from one client took 1.1 cores and kept a window's lists 6-10 times slower, eight
 * such connections 50 times (re-attack 25).
 */
export class IngressMeter {
  private tokens: number;
  private refilledAt: number;
  /** Connections paused for the debt, in the order they were paused. */
  private readonly paused = new Set<IngressReader>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly rate: { bytes: number; burst: number; minRead: number },
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = rate.burst;
    this.refilledAt = now();
  }

  /** A connection's reads; `pause`/`resume` stop and start reading it. One opened while the meter is in debt waits its turn. */
  open(pause: () => void, resume: () => void): IngressReader {
    const reader = new IngressReader(this, pause, resume);
    this.refill();
    if (this.tokens < 0) this.hold(reader);
    return reader;
  }

  /** @internal `bytes` were read from `reader`'s socket: charged at least `rate.minRead`, what a read costs whatever it brings. */
  read(reader: IngressReader, bytes: number): void {
    this.refill();
    this.tokens -= Math.max(bytes, this.rate.minRead);
    if (this.tokens < 0 && !reader.closed) this.hold(reader);
  }

  /** @internal */
  drop(reader: IngressReader): void {
    reader.closed = true;
    this.paused.delete(reader);
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.rate.burst, this.tokens + ((t - this.refilledAt) / 1000) * this.rate.bytes);
    this.refilledAt = t;
  }

  private hold(reader: IngressReader): void {
    if (this.paused.has(reader)) return;
    this.paused.add(reader);
    reader.pause();
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.paused.size === 0) return;
    const ms = Math.max(1, Math.ceil((-this.tokens / this.rate.bytes) * 1000));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.refill();
      if (this.tokens < 0) {
        this.schedule();
        return;
      }
      const waiting = [...this.paused];
      this.paused.clear();
      for (const reader of waiting) reader.resume();
    }, ms);
    this.timer.unref();
  }
}

/** One connection in IngressMeter. */
export class IngressReader {
  closed = false;

  constructor(
    private readonly meter: IngressMeter,
    readonly pause: () => void,
    readonly resume: () => void,
  ) {}

  /** `bytes` were read from its socket. */
  read(bytes: number): void {
    this.meter.read(this, bytes);
  }

  /** It has gone. */
  close(): void {
    this.meter.drop(this);
  }
}

/**
 * A socket read only while nothing holds it: the message turns (messages waiting) and the ingress meter (bytes in
 * debt) pause and resume the same WebSocket, and one must not resume what the other holds.
 */
export function readHolds(pause: () => void, resume: () => void): (who: 'turns' | 'bytes', held: boolean) => void {
  const holds = new Set<string>();
  return (who, held) => {
    const before = holds.size;
    if (held) holds.add(who);
    else holds.delete(who);
    if (before === 0 && holds.size > 0) pause();
    else if (before > 0 && holds.size === 0) resume();
  };
}
