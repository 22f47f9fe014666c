import path from 'node:path';

import { ApiError } from '../../../api/errors';
import { formatIssues } from '../../../api/format-issues';
import type { WizardState } from '../../../api/optimise';
import { IdSchema } from '../../../api/ids';
import { WizardStateSchema } from '../../../api/optimise';
import type { Workspace } from '../../workspace/workspace';
import { isMissing, makeFolder, MiB, readJsonCapped, writeJsonConfined } from '../../workspace/workspace-files';

/** A wizard's state holds its request, trials and runs' ids: far below this. */
const MAX_STATE_BYTES = 16 * MiB;

/** Wizards live beside the runs, one folder per wizard's job id, so a resumed wizard keeps one state across runs. */
export function wizardDir(workspace: Workspace, jobId: string): string {
  if (!IdSchema.safeParse(jobId).success) throw new ApiError('E_BAD_INPUT', `${JSON.stringify(jobId.slice(0, 80))} is not an optimisation id`);
  return workspace.resolve(path.join('optimise', jobId));
}

/** A version 1 state (before issue 39) named the id `optimiseId`, in the state and in its request: read as version 2. */
function upgradeState(json: unknown): unknown {
  if (typeof json !== 'object' || json === null || (json as { schemaVersion?: unknown }).schemaVersion !== 1) return json;
  const { optimiseId, request, ...rest } = json as { optimiseId?: unknown; request?: unknown };
  const upgradedRequest =
    typeof request === 'object' && request !== null
      ? (({ optimiseId: id, ...r }: { optimiseId?: unknown }) => (id === undefined ? r : { ...r, jobId: id }))(request as { optimiseId?: unknown })
      : request;
  return { ...rest, schemaVersion: 2, jobId: optimiseId, request: upgradedRequest };
}

/** Saves the state by temp file + rename: a kill at any moment leaves the previous state or this one, never half of one. */
export async function saveWizardState(workspace: Workspace, state: WizardState): Promise<void> {
  const dir = await makeFolder(workspace, wizardDir(workspace, state.jobId));
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
  const parsed = WizardStateSchema.safeParse(upgradeState(json));
  if (!parsed.success) throw new ApiError('E_DATA', `the saved state of optimisation ${optimiseId} (optimise/${optimiseId}/state.json) does not match the schema: ${formatIssues(parsed.error, 'state')}`);
  if (parsed.data.jobId !== optimiseId) throw new ApiError('E_DATA', `optimise/${optimiseId}/state.json says it is optimisation ${parsed.data.jobId}`);
  return parsed.data;
}
