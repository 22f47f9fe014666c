import { promises as fs } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import type { WizardState } from '../../api/optimise';
import { WizardStateSchema } from '../../api/optimise';
import { writeJsonAtomic } from '../atomic-write';
import type { Workspace } from '../workspace';

/** Wizards live beside the runs, one folder per optimise id, so a resumed wizard keeps one state across runs. */
export function wizardDir(workspace: Workspace, optimiseId: string): string {
  return workspace.resolve(path.join('optimise', optimiseId));
}

/** Saves the state by temp file + rename: a kill at any moment leaves the previous state or this one, never half of one. */
export async function saveWizardState(workspace: Workspace, state: WizardState): Promise<void> {
  const dir = wizardDir(workspace, state.optimiseId);
  await fs.mkdir(dir, { recursive: true });
  await writeJsonAtomic(path.join(dir, 'state.json'), { ...state, updatedAt: new Date().toISOString() });
}

/** The saved state, or E_NOT_FOUND naming the id; a file that does not match the schema is reported, not guessed at. */
export async function loadWizardState(workspace: Workspace, optimiseId: string): Promise<WizardState> {
  const file = path.join(wizardDir(workspace, optimiseId), 'state.json');
  const text = await fs.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') throw new ApiError('E_BAD_INPUT', `no optimisation with the id ${optimiseId} in this workspace (looked for ${file})`);
    throw err;
  });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ApiError('E_DATA', `the saved state of optimisation ${optimiseId} (${file}) is not JSON: ${(err as Error).message}`);
  }
  const parsed = WizardStateSchema.safeParse(json);
  if (!parsed.success) throw new ApiError('E_DATA', `the saved state of optimisation ${optimiseId} (${file}) does not match the schema: ${formatIssues(parsed.error, 'state')}`);
  return parsed.data;
}
