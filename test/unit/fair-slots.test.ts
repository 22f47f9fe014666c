// Re-attack 15: the server's slots for work in flight were one pool refused past its size, so two connections
// with 32 requests each shut every other window out for 37 s. They are now given out in turn.
import { describe, expect, it } from 'vitest';

import { FairSlots } from '../../src-main/core/common/fair-slots';

describe('FairSlots', () => {
  it('gives a freed slot to the next connection in turn, so one request of another window waits behind one of a busy one', () => {
    const slots = new FairSlots(2);
    const busy = {};
    const other = {};
    const started: string[] = [];
    for (let i = 1; i <= 6; i++) slots.take(busy, () => started.push(`busy${i}`));
    slots.take(other, () => started.push('other'));
    expect(started).toEqual(['busy1', 'busy2']);
    slots.release();
    expect(started.at(-1)).toBe('busy3');
    slots.release();
    // The other window's one request comes next, not after the busy one's remaining three.
    expect(started.at(-1)).toBe('other');
    expect(slots.inUse).toBe(2);
  });

  it('starts at once while a slot is free, and a connection that goes takes its waiting work with it', () => {
    const slots = new FairSlots(1);
    const a = {};
    const started: string[] = [];
    slots.take(a, () => started.push('a1'));
    slots.take(a, () => started.push('a2'));
    slots.drop(a);
    slots.release();
    expect(started).toEqual(['a1']);
    expect(slots.inUse).toBe(0);
  });
});
