import { describe, expect, it } from 'vitest';

import { countValues } from '../../src-main/server/message-shape';

const text = (s: string) => Buffer.from(s);

describe('countValues', () => {
  it('counts objects, arrays, items and members, not what strings hold', () => {
    // { "a" : 1 , "b" : [ 1 , 2 ] }: {, :, ,, :, [, , = 6
    expect(countValues(text('{"a":1,"b":[1,2]}'), 100)).toBe(6);
    // A report's markdown full of braces, commas and escaped quotes is one value.
    const markdown = JSON.stringify({ type: 'request', id: 1, method: 'reports.save', params: { id: '0001-x', markdown: '{[,:]} "quoted" \\ '.repeat(10_000) } });
    expect(countValues(text(markdown), 1_000_000)).toBe(12);
  });

  it('stops counting at its bound: a message of millions of tiny values is read no further (re-attacks 23, 24)', () => {
    const dense = text(`[${'{},'.repeat(2_000_000)}{}]`);
    expect(countValues(dense, 65_537)).toBe(65_537);
    expect(countValues(dense, 10_000_000)).toBe(4_000_002);
  });
});
