// The --record layout syntax: members name:dtype:shape, commas inside shapes, an empty shape for one value.
import { describe, expect, it } from 'vitest';

import { formatRecordLayout, parseRecordLayout, placeMembers } from '../../src-main/core/datasets/importers/record-layout';

describe('record layouts', () => {
  it("parses the seeds' board layout, with multi-dimensional and scalar members", () => {
    const record = parseRecordLayout('features:uint8:104,9,9,policy:float16:1496,value:float16:');
    expect(record).toEqual([
      { name: 'features', dtype: 'uint8', shape: [104, 9, 9] },
      { name: 'policy', dtype: 'float16', shape: [1496] },
      { name: 'value', dtype: 'float16', shape: [] },
    ]);
    const { members, recordSize } = placeMembers(record);
    expect(members.map((m) => m.offset)).toEqual([0, 8424, 8424 + 2992]);
    expect(recordSize).toBe(8424 + 2992 + 2);
    expect(formatRecordLayout(record)).toBe('features:uint8:104,9,9,policy:float16:1496,value:float16:');
  });

  it.each([
    ['features:uint9:7', /member 'features' has dtype "uint9", not one of bool, int8/],
    ['features:uint8:7,x', /member 'features' has shape entry "x", not a positive integer/],
    ['features:uint8:0', /member 'features' has shape entry "0", not a positive integer/],
    ['features:uint8:7,,value:float16:', /member 'features' has shape entry "", not a positive integer/],
    ['7,features:uint8:7', /"7" comes before any name:dtype:shape member/],
    ['features:uint8', /"features:uint8" is not name:dtype:shape/],
    ['a:int8:,a:int8:', /member 'a' is given twice/],
    ['9lives:int8:', /member name "9lives" must be letters, digits/],
    ['', /record layout "": it is empty/],
    ['x:int8:\u001b[2J', /shape entry "\\x1b\[2J"/],
  ])('%j is refused, naming the bad part', (layout, message) => {
    let err: unknown;
    try {
      parseRecordLayout(layout);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'E_BAD_INPUT', message: expect.stringMatching(message) });
    expect((err as Error).message).toMatch(/expected name:dtype:shape,\.\.\. e\.g\. features:uint8:104,9,9,value:float16:/);
    // eslint-disable-next-line no-control-regex
    expect((err as Error).message).not.toMatch(/[\x00-\x1f]/);
  });
});
