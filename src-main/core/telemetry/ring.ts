/** A fixed-capacity ring: pushing past capacity drops the oldest entry, so memory stays bounded. */
export class Ring<T> {
  private readonly items: (T | undefined)[];
  private head = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`ring capacity must be a positive integer, got ${capacity}`);
    this.items = new Array<T | undefined>(capacity);
  }

  get size(): number {
    return this.count;
  }

  push(item: T): void {
    this.items[(this.head + this.count) % this.capacity] = item;
    if (this.count < this.capacity) this.count++;
    else this.head = (this.head + 1) % this.capacity;
  }

  /** The newest entry, or undefined when empty. */
  newest(): T | undefined {
    return this.count ? this.items[(this.head + this.count - 1) % this.capacity] : undefined;
  }

  /** Drops entries from the oldest end while drop() is true: a time bound on top of the count bound. */
  dropOldestWhile(drop: (item: T) => boolean): void {
    while (this.count > 0 && drop(this.items[this.head] as T)) {
      this.items[this.head] = undefined;
      this.head = (this.head + 1) % this.capacity;
      this.count--;
    }
  }

  /** Oldest first. */
  toArray(): T[] {
    return Array.from({ length: this.count }, (_, i) => this.items[(this.head + i) % this.capacity] as T);
  }

  /** Entries for which keep() is true, oldest first, scanning back from the newest. */
  since(keep: (item: T) => boolean): T[] {
    const out: T[] = [];
    for (let i = this.count - 1; i >= 0; i--) {
      const item = this.items[(this.head + i) % this.capacity] as T;
      if (!keep(item)) break;
      out.push(item);
    }
    return out.reverse();
  }
}
