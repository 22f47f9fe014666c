import { describe, expect, it } from 'vitest';

import { mapAtOnce } from '../../src-main/core/common/map-at-once';

const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('mapAtOnce', () => {
  it('answers in the items’ order, with at most the given number running at once', async () => {
    let running = 0;
    let most = 0;
    const out = await mapAtOnce([50, 10, 30, 5, 20, 1, 15, 25, 8, 12], () => 3, async (ms, i) => {
      most = Math.max(most, ++running);
      await later(ms);
      running--;
      return `${i}:${ms}`;
    });
    expect(out).toEqual(['0:50', '1:10', '2:30', '3:5', '4:20', '5:1', '6:15', '7:25', '8:8', '9:12']);
    expect(most).toBe(3);
  });

  it('asks for its width before each item: narrowed to one, the rest run one after another', async () => {
    let width = 4;
    let running = 0;
    const seen: number[] = [];
    await mapAtOnce([1, 2, 3, 4, 5, 6, 7, 8], () => width, async (_, i) => {
      seen.push(++running);
      if (i === 3) width = 1;
      await later(5);
      running--;
    });
    expect(seen.slice(0, 4)).toEqual([1, 2, 3, 4]);
    expect(seen.slice(4)).toEqual([1, 1, 1, 1]);
  });

  it('throws the first failure once what runs has settled, and starts nothing after it', async () => {
    const started: number[] = [];
    let settled = 0;
    const done = mapAtOnce([0, 1, 2, 3, 4, 5], () => 2, async (_, i) => {
      started.push(i);
      await later(i === 1 ? 1 : 20);
      settled++;
      if (i === 1) throw new Error('item 1 failed');
    });
    await expect(done).rejects.toThrow('item 1 failed');
    expect(started).toEqual([0, 1]);
    expect(settled).toBe(2);
  });
});
