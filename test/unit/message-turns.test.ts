import { describe, expect, it, vi } from 'vitest';

import { MessageTurns } from '../../src-main/server/message-turns';

const until = async (done: () => boolean) => {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('MessageTurns', () => {
  it('works on a second’s worth at once, then one message of each waiting connection in turn, pausing each while it waits', async () => {
    // 200 bytes a second: a1 and a2 (100 each) spend it, the rest (10 each) come 50 ms apart.
    const turns = new MessageTurns<string>({ messages: 1000, bytes: 200, freeBytes: 0 }, (m) => (m === 'a1' || m === 'a2' ? 100 : 10));
    const worked: string[] = [];
    const calls: string[] = [];
    const a = turns.open((m) => worked.push(m), () => calls.push('pause a'), () => calls.push('resume a'));
    const b = turns.open((m) => worked.push(m), () => calls.push('pause b'), () => calls.push('resume b'));
    for (const m of ['a1', 'a2', 'a3', 'a4', 'a5']) a.offer(m);
    b.offer('b1');
    expect(worked).toEqual(['a1', 'a2']);
    expect(calls).toEqual(['pause a', 'pause b']);
    await until(() => worked.length === 6);
    // b's one message came after a's third had waited: it waits one turn of a's, not a's whole queue.
    expect(worked).toEqual(['a1', 'a2', 'a3', 'b1', 'a4', 'a5']);
    expect(calls).toEqual(['pause a', 'pause b', 'resume b', 'resume a']);
  });

  it('keeps to its message rate: 240 messages at 200 a second, the last after about 0.2 s', async () => {
    const turns = new MessageTurns<number>({ messages: 200, bytes: 1e9, freeBytes: 0 }, () => 1);
    const at: number[] = [];
    const t0 = performance.now();
    const c = turns.open(() => at.push(performance.now() - t0), () => undefined, () => undefined);
    for (let i = 0; i < 240; i++) c.offer(i);
    // The burst of 200 at once, and on a loaded machine the tokens refilled while the offers were made (200 a second).
    const offeredMs = performance.now() - t0;
    expect(at.length).toBeGreaterThanOrEqual(200);
    expect(at.length).toBeLessThanOrEqual(200 + Math.ceil((offeredMs * 200) / 1000));
    await until(() => at.length === 240);
    expect(at.length).toBe(240);
    expect(at[239]).toBeGreaterThanOrEqual(190);
  });

  it('keeps to its byte rate: a message over a second’s bytes waits for a full second’s and is charged all its bytes (re-attack 23)', async () => {
    const turns = new MessageTurns<number>({ messages: 1000, bytes: 100_000, freeBytes: 0 }, (bytes) => bytes);
    const at: number[] = [];
    const t0 = performance.now();
    const c = turns.open(() => at.push(performance.now() - t0), () => undefined, () => undefined);
    for (const bytes of [50_000, 50_000, 50_000, 150_000, 1]) c.offer(bytes);
    await until(() => at.length === 5);
    expect(at.length).toBe(5);
    expect(at[1]).toBeLessThan(50);
    expect(at[2]).toBeGreaterThanOrEqual(450);
    // 150,000 bytes wait for a full second's 100,000, and leave the budget 50,000 short: half a second more.
    expect(at[3] - at[2]).toBeGreaterThanOrEqual(950);
    expect(at[4] - at[3]).toBeGreaterThanOrEqual(450);
  });

  it('lets small messages of other connections go while a large one waits for bytes, and charges small ones none (re-attack 23)', async () => {
    const turns = new MessageTurns<number>({ messages: 1000, bytes: 100_000, freeBytes: 1_000 }, (bytes) => bytes);
    const worked: string[] = [];
    const big = turns.open((m) => worked.push(`big ${m}`), () => undefined, () => undefined);
    const page = turns.open((m) => worked.push(`page ${m}`), () => undefined, () => undefined);
    // 150,000 bytes: the budget is left 50,000 below 0.
    big.offer(150_000);
    big.offer(100_000);
    // The second large message waits 1.5 s for its bytes; the page's small ones go at once, before it.
    for (let i = 0; i < 50; i++) page.offer(500);
    expect(worked.length).toBe(51);
    await until(() => worked.length === 52);
    expect(worked.slice(0, 2)).toEqual(['big 150000', 'page 500']);
    expect(worked.at(-1)).toBe('big 100000');
  });

  it('takes large messages in turn: one that waits for the budget is not passed by smaller large ones (re-attack 24)', async () => {
    const turns = new MessageTurns<number>({ messages: 1000, bytes: 100_000, freeBytes: 1_000 }, (bytes) => bytes);
    const worked: string[] = [];
    const save = turns.open((m) => worked.push(`save ${m}`), () => undefined, () => undefined);
    const flood = turns.open((m) => worked.push(`flood ${m}`), () => undefined, () => undefined);
    flood.offer(90_000);
    // 10,000 left: the save waits for its 80,000; the flood's next ones, 20,000 each, would fit sooner.
    save.offer(80_000);
    for (let i = 0; i < 4; i++) flood.offer(20_000);
    expect(worked).toEqual(['flood 90000']);
    await until(() => worked.length === 2);
    expect(worked[1]).toBe('save 80000');
  });

  it('wakes when the next message that may go can: not later for a large one’s bytes, nor every millisecond for a large one that must wait its turn', async () => {
    const turns = new MessageTurns<number>({ messages: 10, bytes: 100_000, freeBytes: 1_000 }, (bytes) => bytes);
    const timers = vi.spyOn(globalThis, 'setTimeout');
    try {
      const t0 = performance.now();
      const worked: [number, number][] = [];
      const at = (m: number) => worked.push([m, performance.now() - t0]);
      const a = turns.open(at, () => undefined, () => undefined);
      const b = turns.open(at, () => undefined, () => undefined);
      const c = turns.open(at, () => undefined, () => undefined);
      a.offer(100_000);
      // A second's bytes: a wake-up is set for a's next in a second.
      a.offer(100_000);
      // Behind a's, b's 5,000 may not go before it, though its bytes come sooner.
      b.offer(5_000);
      // c's small messages: 9 take the message tokens left, the 10th waits 0.1 s for one, not a second.
      for (let i = 1; i <= 10; i++) c.offer(i);
      expect(worked.length).toBe(10);
      await until(() => worked.length === 13);
      expect(worked.map(([m]) => m)).toEqual([100_000, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100_000, 5_000]);
      expect(worked[10][1]).toBeLessThan(500);
      // until() sleeps 5 ms at a time itself: the rest are MessageTurns' own (a few; about 900 when it woke every millisecond).
      expect(timers.mock.calls.filter(([, ms]) => ms !== 5).length).toBeLessThanOrEqual(20);
    } finally {
      timers.mockRestore();
    }
  });

  it("drops a closed connection's waiting messages and lets the others go on", async () => {
    const turns = new MessageTurns<string>({ messages: 1000, bytes: 100, freeBytes: 0 }, (m) => (m === 'a1' ? 100 : 5));
    const worked: string[] = [];
    const a = turns.open((m) => worked.push(m), () => undefined, () => undefined);
    const b = turns.open((m) => worked.push(m), () => undefined, () => undefined);
    a.offer('a1');
    a.offer('a2');
    a.offer('a3');
    b.offer('b1');
    a.close();
    a.offer('a4');
    await until(() => worked.length === 2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(worked).toEqual(['a1', 'b1']);
  });
});
