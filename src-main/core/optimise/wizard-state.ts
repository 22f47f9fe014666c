import path from 'node:path';

import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import type { WizardState } from '../../api/optimise';
import { IdSchema } from '../../api/ids';
import { WizardStateSchema } from '../../api/optimise';
import type { Workspace } from '../workspace';
import { isMissing, makeFolder, MiB, readJsonCapped, writeJsonConfined } from '../workspace-files';

/** A wizard's state holds its request, trials and runs' ids: far below this. */
const MAX_STATE_BYTES = 16 * MiB;

/** Wizards live beside the runs, one folder per optimise id, so a resumed wizard keeps one state across runs. */
export function wizardDir(workspace: Workspace, optimiseId: string): string {
  if (!IdSchema.safeParse(optimiseId).success) throw new ApiError('E_BAD_INPUT', `${JSON.stringify(optimiseId.slice(0, 80))} is not an optimisation id`);
  return workspace.resolve(path.join('optimise', optimiseId));
}

/** Saves the state by temp file + rename: a kill at any moment leaves the previous state or this one, never half of one. */
export async function saveWizardState(workspace: Workspace, state: WizardState): Promise<void> {
  const dir = await makeFolder(workspace, wizardDir(workspace, state.optimiseId));
  await writeJsonConfined(workspace, path.join(dir, 'state.json'), { ...state, updatedAt: new Date().toISOString() });
}

/** The saved state, or E_BAD_INPUT naming the id; a file that does not match the schema is reported, not guessed at. */
export async function loadWizardState(workspace: Workspace, optimiseId: string): Promise<WizardState> {
  const file = path.join(wizardDir(workspace, optimiseId), 'state.json');
  let json: unknown;
  try {
    json = await readJsonCapped(workspace, file, MAX_STATE_BYTES);
  } catch (err) {
    if (isMissing(err)) throw new ApiError('E_BAD_INPUT', `no optimisation with the id ${optimiseId} in this workspace (looked for optimise/${optimiseId}/state.json)`);
    throw new ApiError('E_DATA', `the saved state of optimisation ${optimiseId} cannot be read: ${(err as Error).message}`);
  }
  const parsed = WizardStateSchema.safeParse(json);
  if (!parsed.success) throw new ApiError('E_DATA', `the saved state of optimisation ${optimiseId} (optimise/${optimiseId}/state.json) does not match the schema: ${formatIssues(parsed.error, 'state')}`);
  if (parsed.data.optimiseId !== optimiseId) throw new ApiError('E_DATA', `optimise/${optimiseId}/state.json says it is optimisation ${parsed.data.optimiseId}`);
  return parsed.data;
}
