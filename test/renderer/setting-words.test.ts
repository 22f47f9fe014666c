// Settings by the names people use (issue 41 item 5): "mixed precision", not "amp.dtype", in labels and verdicts.
import { SCRIPT_OVERRIDE_KEYS } from '@api/script-target';
import { describe, expect, it } from 'vitest';

import { changeLabelWords, overrideWords } from '../../src-renderer/view-models/setting-words';

describe('setting words', () => {
  it('names every override in words', () => {
    for (const key of SCRIPT_OVERRIDE_KEYS) {
      expect(overrideWords(key), key).not.toBe(key);
      expect(overrideWords(key), key).not.toContain(key);
    }
    expect(overrideWords('amp.dtype')).toBe('mixed precision');
  });

  it('says a change labelled by its key in words, and leaves other labels as they are', () => {
    expect(changeLabelWords('amp.dtype fp32 -> bf16')).toBe('mixed precision fp32 -> bf16');
    expect(changeLabelWords('dataloader.num_workers=4')).toBe('loader workers 4');
    expect(changeLabelWords('loader workers 1 -> 2')).toBe('loader workers 1 -> 2');
    expect(changeLabelWords('precision fp32 -> bf16')).toBe('precision fp32 -> bf16');
  });
});
