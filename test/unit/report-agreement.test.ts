// Issue 38: what an ADR says about a wizard's trial agrees with the trial's own numbers.
import { describe, expect, it } from 'vitest';

import type { ReportInput } from '../../src-main/core/reports/report-model';
import { measurementOfBatch } from '../../src-main/core/reports/section-attempts';
import { trialConclusion } from '../../src-main/core/reports/section-wizard';

const sides = { bestSamplesPerSec: [23_000, 23_700, 24_100, 23_400, 23_900], candidateSamplesPerSec: [57_000, 58_700, 58_300, 59_100, 58_000] };

describe("an ADR's words about a wizard trial", () => {
  it('a kept batch-size change (a recipe change, exempt from the loss guard) does not claim its loss stayed within the tolerance', () => {
    const text = trialConclusion({ ...sides, decision: 'accept', lossDelta: 0.236, change: { kind: 'recipe' } });
    expect(text).not.toContain('within the tolerance');
    expect(text).toBe('Accepted and kept: faster by more than the noise. As a change of the training recipe it is not held to the loss tolerance (the mean loss moved +23.6%); check that the training still converges.');
    // A pipeline change passed the guard: it may say so.
    expect(trialConclusion({ ...sides, decision: 'accept', lossDelta: 0.001, change: { kind: 'pipeline' } })).toContain('with the loss within the tolerance');
  });

  it("a batch the search proposes counts as measured with repetitions when a wizard trial measured it", () => {
    const trial = { index: 1, change: { knob: 'batchSize', to: 1024 }, candidateSamplesPerSec: sides.candidateSamplesPerSec };
    const input = { attempts: [{ kind: 'optimise-trial', trial }, { kind: 'search' }] } as unknown as ReportInput;
    expect(measurementOfBatch(input, 1024)).toEqual({ n: 1, words: 'attempt 1 (wizard trial 1, 5 A/B pairs)' });
    expect(measurementOfBatch(input, 512)).toBeNull();
    // A trial that crashed before its pairs measured nothing.
    const crashed = { attempts: [{ kind: 'optimise-trial', trial: { ...trial, candidateSamplesPerSec: [] } }] } as unknown as ReportInput;
    expect(measurementOfBatch(crashed, 1024)).toBeNull();
  });
});
