import type { ScriptTrainRequestInput } from '@api/script-run';
import { ScriptTrainRequestSchema } from '@api/script-run';

import type { ScriptForm } from '../../stores/script-form';
import { emptyScriptForm, scriptRequestFromForm } from '../../stores/script-form';

/** The Script target of the New run form: no step bound until one is typed, no repeat (one launch). */
export function emptyScriptRunForm(): ScriptForm {
  return { ...emptyScriptForm(), steps: null, repeat: 1, timeoutSeconds: 7 * 24 * 3600 };
}

/**
 * The script.train request the form describes: the command, folder, environment and
 * overrides checked as the Benchmarks area checks them, then the whole request by
 * the contract's schema. Throws with the bad field named.
 */
export function scriptTrainRequest(form: ScriptForm): ScriptTrainRequestInput {
  const checked = scriptRequestFromForm({ ...form, repeat: 1, steps: null, timeoutSeconds: 1 });
  const request: ScriptTrainRequestInput = {
    target: checked.target,
    overrides: checked.overrides,
    warmupSteps: form.warmupSteps,
    timeoutSeconds: form.timeoutSeconds,
    ...(form.steps ? { maxSteps: form.steps } : {}),
  };
  const parsed = ScriptTrainRequestSchema.safeParse(request);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.') === 'maxSteps' ? 'max steps' : issue.path.join('.') || 'request';
    throw new Error(`${field}: ${issue.message}`);
  }
  return request;
}
