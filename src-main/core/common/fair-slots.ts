/**
 * Slots for work in flight, shared by every caller (a connection, a window) and given out in turn: a request that
 * finds them all taken waits, behind one request of each other caller that waits, never behind all of one caller's.
 * Refused instead, two connections with 32 requests each held every slot and every other window was refused for
 * 37 s (re-attack 15). A caller that goes takes its waiting requests with it.
 *
 * Waiting in turn is not enough when the slots run long work: two connections at their limit still ran all 64, and
 * another window's `app.info` waited 12-16 s for one of them to end (re-attack 16). So one caller runs at most
 * `perOwner` at once, and the last `reserve` slots go only to a caller with nothing running.
 */
export class FairSlots {
  private running = 0;
  /** Per caller, its requests waiting for a slot; the map's order is the turn. */
  private readonly waiting = new Map<object, (() => void)[]>();
  /** Per caller with work running, how much. */
  private readonly runningBy = new Map<object, number>();
  private readonly perOwner: number;
  private readonly reserve: number;

  constructor(
    private readonly max: number,
    options: { perOwner?: number; reserve?: number } = {},
  ) {
    this.perOwner = options.perOwner ?? max;
    this.reserve = Math.min(options.reserve ?? 0, max - 1);
  }

  /** Starts `work` now if its caller may take a free slot, else in its caller's turn; `release(owner)` ends its slot. */
  take(owner: object, work: () => void): void {
    const queue = this.waiting.get(owner);
    if (queue) queue.push(work);
    else this.waiting.set(owner, [work]);
    this.next();
  }

  /** `work` in `owner`'s turn, its slot given back when it settles; a caller that is dropped meanwhile never gets it. */
  run<T>(owner: object, work: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.take(owner, () => {
        Promise.resolve()
          .then(work)
          .then(resolve, reject)
          .finally(() => this.release(owner));
      });
    });
  }

  /** A slot's work for `owner` has finished. */
  release(owner: object): void {
    this.running--;
    const left = (this.runningBy.get(owner) ?? 1) - 1;
    if (left > 0) this.runningBy.set(owner, left);
    else this.runningBy.delete(owner);
    this.next();
  }

  /** The caller went: what it had waiting will not start. */
  drop(owner: object): void {
    this.waiting.delete(owner);
  }

  get inUse(): number {
    return this.running;
  }

  /** Whether `owner` may take one more slot now. */
  private may(owner: object): boolean {
    const own = this.runningBy.get(owner) ?? 0;
    return own < this.perOwner && (own === 0 || this.max - this.running > this.reserve);
  }

  private next(): void {
    while (this.running < this.max) {
      let chosen: [object, (() => void)[]] | null = null;
      for (const entry of this.waiting) {
        if (this.may(entry[0])) {
          chosen = entry;
          break;
        }
      }
      if (chosen === null) return;
      const [owner, queue] = chosen;
      this.waiting.delete(owner);
      const work = queue.shift()!;
      // To the back of the turn with what it has left.
      if (queue.length > 0) this.waiting.set(owner, queue);
      this.running++;
      this.runningBy.set(owner, (this.runningBy.get(owner) ?? 0) + 1);
      work();
    }
  }
}
