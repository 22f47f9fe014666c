// Re-attack 11: a report title of `GEN &#x202E;fdp.exe&#x202C;` passed every check as plain ASCII, and a code host
// renders the references as the marks themselves. markdownText writes a reference to a mark as its escape.
import { describe, expect, it } from 'vitest';

import MarkdownIt from 'markdown-it';

import { markdownText, table } from '../../src-main/core/reports/markdown';

describe('markdownText', () => {
  it('writes references to marks and invisible characters as their escapes, others as written, and twice as once', () => {
    const text = markdownText('GEN &#x202E;fdp.exe&#x202C; &#8203; &rlm; &ZeroWidthSpace; &#xE0001; A&amp;B &#40; &copy; &nosuch;');
    expect(text).toBe('GEN \\u202efdp.exe\\u202c \\u200b \\u200f \\u200b \\U000e0001 A&amp;B &#40; &copy; &nosuch;');
    expect(markdownText(text)).toBe(text);
  });

  it('a table cell keeps a planted pipe, backslash or not, inside its cell (re-attack 13)', () => {
    const md = table(['run', 'note'], [['a \\| b | c', 'x']]);
    // No pipe is preceded by two backslashes, which a renderer counting them reads as a backslash and a cell's end.
    expect(md).not.toMatch(/\\\\\|/);
    const cells = [...new MarkdownIt().render(md).matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((m) => m[1]);
    expect(cells).toEqual(['a \\| b | c', 'x']);
  });
});
