import { describe, expect, it } from 'vitest';

import { MessageTurns } from '../../src-main/server/message-turns';

const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('MessageTurns', () => {
  it('works on a burst at once, then one message of each waiting connection in turn, pausing each while it waits', async () => {
    const turns = new MessageTurns<string>(200, 2);
    const worked: string[] = [];
    const calls: string[] = [];
    const a = turns.open((m) => worked.push(m), () => calls.push('pause a'), () => calls.push('resume a'));
    const b = turns.open((m) => worked.push(m), () => calls.push('pause b'), () => calls.push('resume b'));
    for (const m of ['a1', 'a2', 'a3', 'a4', 'a5']) a.offer(m);
    b.offer('b1');
    // The burst of 2 at once; the rest wait, and both connections are paused until theirs are worked through.
    expect(worked).toEqual(['a1', 'a2']);
    expect(calls).toEqual(['pause a', 'pause b']);
    await until(() => worked.length === 6);
    // b's one message came after a's third had waited: it waits one turn of a's, not a's whole queue.
    expect(worked).toEqual(['a1', 'a2', 'a3', 'b1', 'a4', 'a5']);
    expect(calls).toEqual(['pause a', 'pause b', 'resume b', 'resume a']);
  });

  it('keeps to its rate: 40 messages at 200 a second take about 0.2 s', async () => {
    const turns = new MessageTurns<number>(200, 1);
    const at: number[] = [];
    const t0 = performance.now();
    const c = turns.open(() => at.push(performance.now() - t0), () => undefined, () => undefined);
    for (let i = 0; i < 40; i++) c.offer(i);
    await until(() => at.length === 40);
    expect(at.length).toBe(40);
    expect(at[39]).toBeGreaterThanOrEqual(190);
  });

  it("drops a closed connection's waiting messages and lets the others go on", async () => {
    const turns = new MessageTurns<string>(200, 1);
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
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(worked).toEqual(['a1', 'b1']);
  });
});
