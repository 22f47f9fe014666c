// The ADR's Decision for a script wizard whose only win was a recipe change (issue 27 item 2): it says nothing
// was kept, never "no change beat the noise", and gives the code and the flag for the proposed change.
// The run file is the v1 fixture, written before the fix, whose saved verdict still says the old words.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import type { OptimiseRun, ScriptOptimiseRun } from '../../src-main/core/reports/report-runs';
import { engineWizardView, scriptWizardView, wizardAttemptBody, wizardDecisionLines } from '../../src-main/core/reports/section-wizard';
import { REPO_ROOT } from '../helpers/repo';
import { engineWizard, scriptWizard } from '../helpers/target-detail';

const RUN = path.join(REPO_ROOT, 'test/fixtures/runs-v1/script-optimise/runs/20261127-033500-4b042a/run.json');

describe("the script wizard's Decision when only a recipe change beat the noise", () => {
  it('leads with what was proposed, and how to apply it', () => {
    // The v1 file's result read as the reports read it (through the one wizard schema).
    const raw = JSON.parse(readFileSync(RUN, 'utf8')) as ScriptOptimiseRun;
    const run = { ...raw, result: scriptWizard(raw.result) };
    const lines = wizardDecisionLines(scriptWizardView(run));
    const text = lines.join('\n');
    expect(text).not.toMatch(/no change beat the noise/i);
    expect(lines[0]).toBe(
      "The wizard's verdict (`20261127-033500-4b042a`, from its run file): No change was kept (±5.7%): keep the script as it runs, 10440 samples/s. A recipe change beat the noise and is proposed below.",
    );
    expect(lines).toContain(
      'Nothing was kept: the changes that beat the noise change the training recipe (below); apply one with its learning-rate rule, or run the wizard again allowing recipe changes to keep it.',
    );
    expect(lines).toContain('- dataloader.batch_size 64 -> 128: a larger batch changes the training recipe: scale the learning rate with it (linear rule: x2) and check the accuracy');
    expect(text).toContain('```python\nDataLoader(..., batch_size=128)  # or: --set dataloader.batch_size=128\n```');
  });
});

describe("a wizard trial's Configuration line", () => {
  const ENGINE = path.join(REPO_ROOT, 'test/fixtures/runs-v1/engine-optimise/runs/20261127-033431-16ea23/run.json');

  it('says the change in words, without the setting\'s config key when the words already name it (a UI walk read `batchSize`)', () => {
    const raw = JSON.parse(readFileSync(ENGINE, 'utf8')) as OptimiseRun;
    const run = { ...raw, result: engineWizard(raw.result) };
    const body = wizardAttemptBody(1, engineWizardView(run), run.result.trials[0]);
    expect(body).toContain('**Configuration**: batch size 64 -> 128 (a recipe change) on top of the current best');
    expect(body).not.toContain('`batchSize`');
  });
});
