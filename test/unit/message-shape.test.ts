import { describe, expect, it } from 'vitest';

import { holdsMoreValues } from '../../src-main/server/message-shape';

const text = (s: string) => Buffer.from(s);

describe('holdsMoreValues', () => {
  it('counts objects, arrays, items and members, not what strings hold', () => {
    // { "a" : 1 , "b" : [ 1 , 2 ] }: {, :, ,, :, [, , = 6
    expect(holdsMoreValues(text('{"a":1,"b":[1,2]}'), 6)).toBe(false);
    expect(holdsMoreValues(text('{"a":1,"b":[1,2]}'), 5)).toBe(true);
    // A report's markdown full of braces, commas and escaped quotes is one value.
    const markdown = JSON.stringify({ type: 'request', id: 1, method: 'reports.save', params: { id: '0001-x', markdown: '{[,:]} "quoted" \\ '.repeat(10_000) } });
    expect(holdsMoreValues(text(markdown), 16)).toBe(false);
  });

  it('says a message of millions of tiny values holds more, at any bound it passes (re-attack 23)', () => {
    const dense = text(`[${'{},'.repeat(2_000_000)}{}]`);
    expect(holdsMoreValues(dense, 65_536)).toBe(true);
    expect(holdsMoreValues(dense, 4_000_002)).toBe(false);
  });
});
