// Re-attack 11: two clients that never read, each with 32 requests for a 16 MiB figure of control bytes (96 MB as
// JSON), ran the server out of memory: answers waiting were bounded by count, never by bytes. Now one answer is at
// most maxAnswerBytes as JSON, and answers waiting in all connections share one budget; past it an answer is
// refused, saying why, and what waits is let go when a client leaves.
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';

import type { ServerMessage } from '../../src-main/api/wire';
import { Outbox, type WaitingBudget } from '../../src-main/server/ws-outbox';

/**
 * A socket whose unsent bytes the test sets: "full" stands for a client that does not read. What it was handed
 * counts as written out only once `written()` runs the sends' callbacks, as a socket does when the kernel took it.
 */
function socket() {
  const sent: string[] = [];
  const pending: (() => void)[] = [];
  const ws = {
    OPEN: 1,
    readyState: 1,
    bufferedAmount: 0,
    send: (text: string, cb?: () => void) => {
      sent.push(text);
      if (cb) pending.push(cb);
    },
    terminate() {},
  };
  return { ws, sent, written: () => pending.splice(0).forEach((cb) => cb()) };
}
const KiB = 1024;
const answer = (id: number, bytes: number): ServerMessage => ({ type: 'response', id, ok: true, result: 'x'.repeat(bytes) }) as ServerMessage;
const outbox = (ws: unknown, budget: WaitingBudget, maxAnswerBytes = 1024 * KiB) =>
  new Outbox(ws as WebSocket, { maxBuffered: 8 * 1024 * KiB, highWater: 64 * KiB, stallMs: 60_000, log: () => undefined, who: 'test', budget, maxAnswerBytes });

describe('answers waiting for clients that do not read', () => {
  it('hold at most the shared budget over all connections; the rest are refused, saying why, and all is let go on close', () => {
    const budget = { bytes: 0, max: 1024 * KiB };
    const clients = [socket(), socket()];
    const boxes = clients.map((c) => outbox(c.ws, budget));
    for (const c of clients) c.ws.bufferedAmount = 10 * 1024 * KiB; // full: they do not read
    let freed = 0;
    for (let id = 1; id <= 32; id++) for (const box of boxes) box.answer(answer(id, 100 * KiB), () => freed++);
    expect(budget.bytes).toBeLessThanOrEqual(budget.max);
    expect(budget.bytes).toBeGreaterThan(budget.max - 110 * KiB);
    // The first client reads again: its answers go out in order, the ones over the budget as refusals.
    clients[0].ws.bufferedAmount = 0;
    boxes[0].answer(answer(33, 10), () => freed++);
    const texts = clients[0].sent.map((t) => JSON.parse(t) as { id: number; ok: boolean; error?: { message: string } });
    expect(texts.map((t) => t.id)).toEqual(Array.from({ length: 33 }, (_, i) => i + 1));
    expect(texts.filter((t) => t.ok).length).toBeGreaterThan(0);
    expect(texts.find((t) => !t.ok)?.error?.message).toMatch(/^the server holds [\d.]+ MiB of answers its clients have not read yet: ask again/);
    boxes.forEach((b) => b.close());
    expect(budget.bytes).toBe(0);
    expect(freed).toBe(65);
  });

  it('refuses an answer larger than one answer may be, naming both sizes, instead of sending it', () => {
    const budget = { bytes: 0, max: 1024 * KiB };
    const c = socket();
    outbox(c.ws, budget, 64 * KiB).answer(answer(7, 100 * KiB), () => undefined);
    expect(JSON.parse(c.sent[0])).toMatchObject({ id: 7, ok: false, error: { code: 'E_BAD_REQUEST', message: expect.stringMatching(/^the answer is 0\.1 MiB as JSON, more than the 0\.1 MiB one answer may be$/) } });
  });

  it('count answers handed to a socket until it has written them out: clients that never read hold at most the budget', () => {
    // Re-attack 12: 31 clients that never read, 2 answers each; the first of each went straight to its socket,
    // uncounted, and 62 answers of 23 MiB took the server to 3.3 GiB.
    const budget = { bytes: 0, max: 1024 * KiB };
    const clients = Array.from({ length: 31 }, () => socket());
    const boxes = clients.map((c) => outbox(c.ws, budget));
    for (const box of boxes) for (const id of [1, 2]) box.answer(answer(id, 300 * KiB), () => undefined);
    expect(budget.bytes).toBeLessThanOrEqual(budget.max);
    const refused = clients.flatMap((c) => c.sent.map((t) => JSON.parse(t) as { ok: boolean })).filter((t) => !t.ok);
    expect(refused.length).toBeGreaterThanOrEqual(62 - 3);
    // Written out by the sockets that had them: no longer held, and a new answer fits again.
    for (const c of clients) c.written();
    expect(budget.bytes).toBe(0);
    boxes[0].answer(answer(3, 300 * KiB), () => undefined);
    expect(JSON.parse(clients[0].sent.at(-1)!)).toMatchObject({ id: 3, ok: true });
    // A client that leaves lets go of what its socket still held.
    boxes[0].close();
    expect(budget.bytes).toBe(0);
    boxes.forEach((b) => b.close());
  });

  it('a refusal is never counted in the budget, and its `written` runs once its socket has written it out or the client is gone', () => {
    // Re-attack 14: a refusal counted only until handed to the socket let a client that never read pile them up.
    const budget = { bytes: 0, max: 1024 * KiB };
    const c = socket();
    const box = outbox(c.ws, budget);
    let unwritten = 0;
    for (let id = 1; id <= 3; id++) {
      unwritten++;
      box.answer({ type: 'response', id, ok: false, error: { code: 'E_BAD_REQUEST', message: 'message is not JSON' } } as ServerMessage, () => undefined, { refusal: true, written: () => unwritten-- });
    }
    expect(c.sent).toHaveLength(3);
    expect(budget.bytes).toBe(0);
    expect(unwritten).toBe(3); // handed to the socket, not yet written out
    c.written();
    expect(unwritten).toBe(0);
    unwritten++;
    box.answer({ type: 'response', id: 4, ok: false, error: { code: 'E_BAD_REQUEST', message: 'x' } } as ServerMessage, () => undefined, { refusal: true, written: () => unwritten-- });
    box.close();
    expect(unwritten).toBe(0);
  });
});
