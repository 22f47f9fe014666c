/**
 * The server's slots for work in flight, shared by every connection and given out in turn: a request that finds
 * them all taken waits, behind one request of each other connection that waits, never behind all of one
 * connection's. Refused instead, two connections with 32 requests each held every slot and every other window
 * was refused for 37 s (re-attack 15). A connection that goes takes its waiting requests with it.
 */
export class FairSlots {
  private running = 0;
  /** Per connection, its requests waiting for a slot; the map's order is the turn. */
  private readonly waiting = new Map<object, (() => void)[]>();

  constructor(private readonly max: number) {}

  /** Starts `work` now if a slot is free and nobody waits, else in its connection's turn; `release` ends its slot. */
  take(owner: object, work: () => void): void {
    const queue = this.waiting.get(owner);
    if (queue) queue.push(work);
    else this.waiting.set(owner, [work]);
    this.next();
  }

  /** A slot's work has finished. */
  release(): void {
    this.running--;
    this.next();
  }

  /** The connection went: what it had waiting will not start. */
  drop(owner: object): void {
    this.waiting.delete(owner);
  }

  get inUse(): number {
    return this.running;
  }

  private next(): void {
    while (this.running < this.max && this.waiting.size > 0) {
      const [owner, queue] = this.waiting.entries().next().value as [object, (() => void)[]];
      this.waiting.delete(owner);
      const work = queue.shift()!;
      // To the back of the turn with what it has left.
      if (queue.length > 0) this.waiting.set(owner, queue);
      this.running++;
      work();
    }
  }
}
