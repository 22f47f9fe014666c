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

  it("escapes a file's keys in the path it names: a record's keys are whatever the file holds (re-attack 10)", () => {
    const parsed = z.record(z.string().regex(/^[A-Z_]+$/), z.string()).safeParse({ 'K\x1b[31m\r\u202e\u2028': 'v' });
    const line = formatIssues(parsed.error!, 'env');
    expect(line).toContain('env.K\\x1b[31m\\r\\u202e\\u2028');
    expect(line).not.toMatch(/[\x1b\r\u202e\u2028]/); // eslint-disable-line no-control-regex -- what must not be there
  });
});

