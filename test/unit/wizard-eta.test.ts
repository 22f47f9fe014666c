import { describe, expect, it } from 'vitest';

import { wizardEta } from '../../src-main/core/optimise/eta';

describe('the wizards’ ETA (both targets)', () => {
  const base = { launchSeconds: [2, 4], repeat: 3, trialsLeft: 2, finalDone: false };

  it('counts the launches left at the mean launch time: the rest of the phase, 2 x repeat a trial, 2 x repeat for the final', () => {
    expect(wizardEta({ ...base, phase: 'baseline', repetition: 1 })).toBe(3 * (2 + 12 + 6));
    expect(wizardEta({ ...base, phase: 'trial', repetition: 2 })).toBe(3 * (2 + 12 + 6));
    expect(wizardEta({ ...base, phase: 'final', repetition: 1, trialsLeft: 0 })).toBe(3 * 4);
    expect(wizardEta({ ...base, phase: 'done', repetition: 0, trialsLeft: 0 })).toBe(0);
    expect(wizardEta({ ...base, phase: 'trial', repetition: 3, trialsLeft: 0, finalDone: true })).toBe(0);
  });

  it('says nothing before a launch has ended, and never counts a negative number of trials', () => {
    expect(wizardEta({ ...base, launchSeconds: [], phase: 'baseline', repetition: 0 })).toBeNull();
    expect(wizardEta({ ...base, phase: 'trial', repetition: 3, trialsLeft: -1 })).toBe(3 * 6);
  });
});
