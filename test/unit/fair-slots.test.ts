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
    slots.release(busy);
    expect(started.at(-1)).toBe('busy3');
    slots.release(busy);
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
    slots.release(a);
    expect(started).toEqual(['a1']);
    expect(slots.inUse).toBe(0);
  });

  // Re-attack 16: two connections at their limit still ran all 64 slots, and another window's request waited
  // 12-16 s for one of them to end.
  it('runs at most perOwner of one caller at once and keeps the reserve for a caller with nothing running', () => {
    const slots = new FairSlots(8, { perOwner: 3, reserve: 2 });
    const started: string[] = [];
    const callers = [{}, {}];
    callers.forEach((c, k) => {
      for (let i = 1; i <= 5; i++) slots.take(c, () => started.push(`c${k}.${i}`));
    });
    // Each runs up to 3, but only while more than 2 slots are free: 6 run, 2 are kept.
    expect(slots.inUse).toBe(6);
    expect(started.filter((s) => s.startsWith('c0')).length).toBeLessThanOrEqual(3);
    // A newcomer with nothing running takes a kept slot at once, even with 4 requests of others waiting.
    const idle = {};
    slots.take(idle, () => started.push('idle'));
    expect(started.at(-1)).toBe('idle');
    expect(slots.inUse).toBe(7);
    // Its second request is not let into the last kept slot while it has one running.
    slots.take(idle, () => started.push('idle2'));
    expect(started.at(-1)).toBe('idle');
    expect(slots.inUse).toBe(7);
  });
});

