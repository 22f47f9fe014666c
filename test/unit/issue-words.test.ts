// A form field's contract issue in words beside the value typed (a UI walk saw "1 is invalid: too small: expected
// number to be >=2" under the Optimise form's repetitions): each bound zod reports, and a refinement's own message.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { issueWords } from '../../src-main/api/format-issues';

const wordsOf = (schema: z.ZodType, value: unknown) => issueWords(schema.safeParse(value).error!.issues[0]!);

describe('issueWords', () => {
  it('says each numeric bound as a person would', () => {
    expect(wordsOf(z.number().int().min(2), 1)).toBe('must be at least 2');
    expect(wordsOf(z.number().int().max(100), 101)).toBe('must be at most 100');
    expect(wordsOf(z.number().positive(), 0)).toBe('must be more than 0');
    expect(wordsOf(z.number().lt(1), 1)).toBe('must be less than 1');
    expect(wordsOf(z.number().max(1_000_000), 2_000_000)).toBe('must be at most 1,000,000');
  });

  it('says a whole number or a number where the type is wrong', () => {
    expect(wordsOf(z.number().int(), 1.5)).toBe('must be a whole number');
    expect(wordsOf(z.number(), 'x')).toBe('must be a number');
    expect(wordsOf(z.number(), Number.NaN)).toBe('must be a number');
  });

  it("keeps a refinement's own words, its first letter lowered", () => {
    expect(wordsOf(z.string().refine((s) => s.length > 3, 'Names are longer than 3 characters'), 'ab')).toBe('names are longer than 3 characters');
  });
});
