/**
 * The slots uploads (or downloads) are moved in, few at once. With every slot taken, a new transfer takes the slot
 * of the slowest one that averages under the fair rate, rather than being refused: a floor alone is easy to stay
 * just above (four uploads at 2.3 KB/s held every slot; re-attack 15).
 *
 * A young transfer is judged too, after a short grace (its first bytes, a TCP window): exempt for a whole rate
 * window, four uploads started in rotation, each evicting the oldest as it turned 30 s, held every slot at 10 KB/s
 * in all (re-attack 16). A person's transfer over any real link moves far faster than the fair rate.
 */

/** A transfer's first moments are not judged: a connection's start is slow before its window opens. */
export const TRANSFER_GRACE_MS = 2_000;

/** One transfer holding a slot. */
export interface Transfer {
  since: number;
  /** Bytes moved since it began. */
  moved(): number;
  /** Makes it give up its slot, saying why. */
  evict(why: string): void;
}

export class TransferSlots {
  private readonly active = new Set<Transfer>();

  /** `what` names a transfer in the evicted one's reason ("upload"); `graceMs` is never longer than the floor's window. */
  constructor(
    private readonly max: number,
    private readonly fairBytesPerSecond: number,
    private readonly what: string,
    private readonly graceMs = TRANSFER_GRACE_MS,
  ) {}

  get size(): number {
    return this.active.size;
  }

  /** Whether a new transfer may start: a slot is free, or the slowest one under the fair rate was made to give up its own. */
  claim(now = Date.now()): boolean {
    if (this.active.size < this.max) return true;
    let slowest: { t: Transfer; perSecond: number } | null = null;
    for (const t of this.active) {
      const ms = now - t.since;
      if (ms < this.graceMs) continue;
      const perSecond = (t.moved() * 1000) / ms;
      if (perSecond < this.fairBytesPerSecond && (slowest === null || perSecond < slowest.perSecond)) slowest = { t, perSecond };
    }
    if (slowest === null) return false;
    this.active.delete(slowest.t);
    slowest.t.evict(`it gave its slot to another ${this.what}: ${Math.round(slowest.perSecond)} bytes a second, under the ${this.fairBytesPerSecond} that keeps a slot while others wait`);
    return true;
  }

  add(t: Transfer): void {
    this.active.add(t);
  }

  delete(t: Transfer): void {
    this.active.delete(t);
  }
}
