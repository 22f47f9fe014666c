// Settings by the names people use (issue 41 item 5): "mixed precision", not "amp.dtype", in labels and verdicts.
import { SCRIPT_OVERRIDE_KEYS } from '@api/script-target';
import { describe, expect, it } from 'vitest';

import type { OptimiseProgress } from '../../src-main/api/optimise';
import { progressShort, progressText } from '../../src-renderer/components/optimise/progress-text';
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

  it("the Optimise progress line and the Runs list's say a script change in words (UI round 4: the line said dataloader.num_workers)", () => {
    const p = { jobId: 'j', target: 'script', runId: null, phase: 'trial', trial: 1, maxTrials: 3, repetition: 0, repetitions: 2, label: 'dataloader.num_workers 0 -> 2', elapsedSeconds: 12, etaSeconds: 30, finishedTrial: null } as OptimiseProgress;
    expect(progressText(p).text).toBe('trial 1 (at most 3): loader workers 0 -> 2, measuring pair 1 of 2');
    expect(progressShort(p)).toBe('trial 1 of at most 3: loader workers 0 -> 2, pair 1 of 2');
  });
});
