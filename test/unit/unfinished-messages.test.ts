import { beforeEach, describe, expect, it } from 'vitest';
import { UnfinishedMessages } from '../../src-main/server/unfinished-messages';

const SILENT = 'one that had sent no whole message since it opened';

describe('UnfinishedMessages', () => {
  let clock = 0;
  beforeEach(() => {
    clock = 0;
  });
  it('gives up the connection with the most bytes of an unfinished message, once, and only past the minimum', () => {
    const left: string[] = [];
    const messages = new UnfinishedMessages(64 * 1024, 1000, () => clock);
    const a = messages.track(() => left.push('a'));
    const b = messages.track(() => left.push('b'));
    const c = messages.track(() => left.push('c'));
    a.read(64 * 1024);
    a.read(64 * 1024);
    b.read(64 * 1024);
    c.read(60 * 1024);
    expect(messages.holding(3)).toBe(3);
    expect(messages.giveUp()).toBe('one in the middle of its first message (131,072 bytes of it read)');
    expect(left).toEqual(['a']);
    // a still counts among the clients until it has closed, but no longer holds a place.
    expect(messages.holding(3)).toBe(2);
    expect(messages.giveUp()).toBe('one in the middle of its first message (65,536 bytes of it read)');
    expect(left).toEqual(['a', 'b']);
    // c's 60 KiB is under the minimum: no place to give.
    expect(messages.giveUp()).toBeNull();
    messages.closed(a);
    messages.closed(b);
    expect(messages.holding(1)).toBe(1);
  });

  it('counts the reads of a message not yet whole, not the read that completed one', () => {
    const messages = new UnfinishedMessages(1, 1000, () => clock);
    const m = messages.track(() => undefined);
    m.read(100);
    m.read(100);
    expect([m.reads, m.bytes]).toEqual([2, 200]);
    // The WebSocket parses a read before this count sees it: the read that completed the message comes after.
    m.completed();
    m.read(100);
    expect([m.reads, m.bytes]).toEqual([0, 0]);
    expect(messages.giveUp()).toBeNull();
    m.read(5);
    expect([m.reads, m.bytes]).toEqual([1, 5]);
  });

  it('forgets a connection that closed without being given up', () => {
    const messages = new UnfinishedMessages(1, 1000, () => clock);
    const m = messages.track(() => {
      throw new Error('a closed connection was given up');
    });
    m.read(1000);
    messages.closed(m);
    expect(messages.giveUp()).toBeNull();
    expect(messages.holding(0)).toBe(0);
  });

  it('gives up the oldest connection that has sent no whole message a second after it opened, after any heavy one, never one that has', () => {
    const left: string[] = [];
    const messages = new UnfinishedMessages(64 * 1024, 1000, () => clock);
    const quiet = messages.track(() => left.push('quiet'));
    clock = 100;
    messages.track(() => left.push('later'));
    const talked = messages.track(() => left.push('talked'));
    talked.completed();
    clock = 999;
    expect(messages.giveUp()).toBeNull();
    clock = 1100;
    // A window at work in the middle of a large message: never given up (re-attack 27).
    const saving = messages.track(() => left.push('saving'));
    saving.completed();
    saving.read(100);
    saving.read(1024 * 1024);
    const heavy = messages.track(() => left.push('heavy'));
    heavy.read(64 * 1024);
    expect(messages.giveUp()).toBe('one in the middle of its first message (65,536 bytes of it read)');
    quiet.read(10);
    expect(messages.giveUp()).toBe(SILENT);
    expect(messages.giveUp()).toBe(SILENT);
    // talked sent a whole message: it keeps its place however old.
    clock = 60_000;
    expect(messages.giveUp()).toBeNull();
    expect(left).toEqual(['heavy', 'quiet', 'later']);
  });
});
