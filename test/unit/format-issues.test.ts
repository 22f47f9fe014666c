// A schema's errors in one line: a tampered file with a million bad entries (re-attack round 6) gave a message of
// over 100 MiB; the first 20 are named, then how many more.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { formatIssues } from '../../src-main/api/format-issues';

describe('formatIssues', () => {
  it('names the first 20 issues and counts the rest', () => {
    const parsed = z.array(z.number()).safeParse(Array.from({ length: 1000 }, (_, i) => `x${i}`));
    const line = formatIssues(parsed.error!, 'ranks');
    expect(line.split('; ')).toHaveLength(21);
    expect(line.startsWith('ranks.0: ')).toBe(true);
    expect(line.endsWith('; and 980 more')).toBe(true);
  });

  it('says every issue of a few', () => {
    const parsed = z.object({ port: z.number(), host: z.string() }).safeParse({ port: 'abc', host: 1 });
    expect(formatIssues(parsed.error!, 'params')).toMatch(/^params\.port: .+; params\.host: [^;]+$/);
  });
});
