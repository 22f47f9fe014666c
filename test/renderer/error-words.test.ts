// Errors as people read them (issue 41 item 5): words for each contract code, never the code itself.
import { ApiError, ErrorCodeSchema } from '@api/errors';
import { describe, expect, it } from 'vitest';

import { codeOf, errorWords, withoutCodes } from '@api/error-words';
import { errorText } from '../../src-renderer/stores/error-text';

describe('error words', () => {
  it('says a person’s own cancel as "cancelled", an OOM as "out of memory", a refused input by its message alone', () => {
    expect(errorText(new ApiError('E_CANCELLED', 'the engine was stopped'))).toBe('cancelled: the engine was stopped');
    expect(errorText(new ApiError('E_CANCELLED', 'the import was cancelled'))).toBe('the import was cancelled');
    expect(errorText(new ApiError('E_OOM', 'asked for 2 GiB, 1 GiB free'))).toBe('out of memory: asked for 2 GiB, 1 GiB free');
    expect(errorText(new ApiError('E_BAD_INPUT', 'batchSize 0: use at least 1'))).toBe('batchSize 0: use at least 1');
    expect(errorText(new ApiError('E_DATA', 'broken.npy is not a .npy file'))).toBe('broken.npy is not a .npy file');
    expect(errorText(new ApiError('E_INTERNAL', 'disk gone'))).toBe('unexpected error: disk gone');
  });

  it('never shows a code, whichever the contract has', () => {
    for (const code of ErrorCodeSchema.options) {
      const text = errorText(new ApiError(code, 'something happened'));
      expect(text, code).not.toMatch(/\bE_[A-Z_]+\b/);
      expect(text, code).toContain('something happened');
      expect(errorWords(code, ''), code).not.toBe('');
    }
  });

  it('takes the codes out of text the service wrote, keeping the code for a tooltip', () => {
    expect(withoutCodes('E_OOM: the step needs 3 GiB')).toBe('out of memory: the step needs 3 GiB');
    expect(withoutCodes('E_CANCELLED: run x was cancelled before its first step')).toBe('run x was cancelled before its first step');
    expect(withoutCodes('batch 19 is the largest that fits (20: E_OOM); fastest: 16')).toBe('batch 19 is the largest that fits (20: out of memory); fastest: 16');
    expect(withoutCodes('no code here')).toBe('no code here');
    expect(codeOf('E_OOM: the step needs 3 GiB')).toBe('E_OOM');
    expect(codeOf('no code here')).toBe('');
    expect(codeOf(null)).toBe('');
  });

  it("shows a message that quotes a planted file with its control and invisible characters escaped (re-attack 8: a saved state's title and cwd)", () => {
    const planted = 'script optimisation x measured another command (TA\x1b[2K\rB\x07\u202e\u2066Z\u200bH in /tmp/A\u2064): resume it with its own target';
    const shown = errorText(new ApiError('E_BAD_INPUT', planted));
    expect(shown).toBe('script optimisation x measured another command (TA\\x1b[2K\\rB\\x07\\u202e\\u2066Z\\u200bH in /tmp/A\\u2064): resume it with its own target');
    // A message of several lines keeps them.
    expect(errorWords('E_SCRIPT', 'the script failed:\nTraceback')).toBe('the script failed:\nTraceback');
  });
});
