// A CSV's header row, read before the label column is chosen: its columns, the likely label, and the
// first lines that cannot be a header.
import { describe, expect, it } from 'vitest';

import { headerColumns, suggestLabel } from '../../src-main/core/datasets/importers/csv-header';

describe('suggestLabel', () => {
  it('prefers a column named label, target, y or class (any case), in that order', () => {
    expect(suggestLabel(['a', 'Class', 'b'])).toBe('Class');
    expect(suggestLabel(['y', 'target', 'x1'])).toBe('target');
    expect(suggestLabel(['label', 'target'])).toBe('label');
    expect(suggestLabel(['x1', 'x2', 'Y'])).toBe('Y');
  });

  it('falls back to the last named column', () => {
    expect(suggestLabel(['sepal_length', 'sepal_width', 'species'])).toBe('species');
    expect(suggestLabel(['a', 'b', ''])).toBe('b');
  });
});

describe('headerColumns', () => {
  it('splits quoted names and trims them', () => {
    expect(headerColumns(' a , "b,c" ,"say ""hi"""', 'f.csv')).toEqual(['a', 'b,c', 'say "hi"']);
  });

  it('takes pandas-style numbered columns as a header, but not a row of measurements', () => {
    expect(headerColumns('0,1,2,3', 'f.csv')).toEqual(['0', '1', '2', '3']);
    expect(() => headerColumns('5.1,3.5,1.4,0', 'iris.csv')).toThrow(
      /iris\.csv has no header row: its first line \(5\.1, 3\.5, 1\.4, 0\) is numbers; add a first line naming the columns/,
    );
  });

  it('refuses binary bytes, naming the file and where', () => {
    expect(() => headerColumns('ab\u0000cd', 'blob.csv')).toThrow(/blob\.csv is not a text CSV file: its first line holds a zero byte at character 3/);
    expect(() => headerColumns('a,\ufffd', 'latin.csv')).toThrow(/latin\.csv is not a text CSV file: its first line holds bytes that are not UTF-8 text at character 3/);
  });

  it('refuses two columns of one name, which would make the label ambiguous', () => {
    expect(() => headerColumns('a,b,a', 'dup.csv')).toThrow(/dup\.csv: columns 1 and 3 are both named 'a'/);
  });
});
