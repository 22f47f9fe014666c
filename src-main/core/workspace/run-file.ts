import path from 'node:path';

import { ApiError } from '../../api/errors';
import { ID_PATTERN } from '../../api/ids';
import type { RunRecordJson } from '../../api/run-record';
import { parseRunRecord } from '../../api/run-record';
import { jsonShapeProblem } from './json-depth';
import type { Workspace } from './workspace';
import { folderProblem, isMissing, MiB, readTextCapped } from './workspace-files';
import { quotedText } from '../../api/shell-word';

// A run's own file, run.json, read through its schema; and the check every request that names one run makes
// first, so that runs.get and runs.annotate say the same of a run that is missing, a link or unreadable.

/**
 * run.json holds a config and a result (a trial table, 2,000 curve points, 200 output lines at most): far below
 * this. Every concurrent runs.get parses one whole, so the cap bounds each request's memory (a planted 16 MiB
 * file held by a thousand requests at once grew the server past its heap).
 */
export const MAX_RUN_JSON_BYTES = 4 * MiB;
/**
 * Nesting run.json never comes near (a config is a few levels deep); a file nested deeper is not one
 * Trainbench wrote, and would overflow the stack of whatever walks it (a 100,000-deep config did).
 */
const MAX_RUN_JSON_DEPTH = 256;

/**
 * What one list (runs.list) may read of run.json files in all: each is capped, but a copied workspace can hold
 * hundreds of hard links to one 4 MiB file (no disk spent), and every list parsed each whole (8 s and 650 MiB a
 * list, re-attack 9). An ordinary run.json is about 10 KB: thousands of runs fit; past it, runs are listed unread.
 */
export const LIST_RUN_JSON_BYTES = 256 * MiB;

export interface RunReadBudget {
  bytesLeft: number;
  readonly totalMiB: number;
}

export const runReadBudget = (bytes = LIST_RUN_JSON_BYTES): RunReadBudget => ({ bytesLeft: bytes, totalMiB: Math.round(bytes / MiB) });

/** run.json through its schema: the record, or the problem in words; with a budget, read only while it lasts. */
export async function readRun(
  workspace: Workspace,
  id: string,
  budget?: RunReadBudget,
): Promise<{ record: RunRecordJson; problem: null } | { record: null; problem: string }> {
  if (budget && budget.bytesLeft <= 0) return { record: null, problem: `not read: this list has read the ${budget.totalMiB} MiB of run files one list reads (a workspace of ordinary runs holds thousands within it)` };
  let text: string;
  try {
    text = await readTextCapped(workspace, path.join('runs', id, 'run.json'), MAX_RUN_JSON_BYTES);
  } catch (err) {
    return { record: null, problem: `cannot read runs/${id}/run.json: ${(err as Error).message}` };
  }
  if (budget) budget.bytesLeft -= text.length;
  const shape = jsonShapeProblem(text, MAX_RUN_JSON_DEPTH);
  if (shape) return { record: null, problem: `runs/${id}/run.json is ${shape}: not a file Trainbench wrote, so it is not read` };
  return parseRunRecord(text);
}

/**
 * The record of run `id`, or the error to answer with: not a run id, no such run (E_BAD_INPUT), or a run
 * folder that is a link or a file, or a run.json that cannot be read (E_DATA, saying what is wrong, as the
 * runs list does).
 */
export async function requireRun(workspace: Workspace, id: string): Promise<RunRecordJson> {
  if (!ID_PATTERN.test(id)) throw new ApiError('E_BAD_INPUT', `${quotedText(id, 80)} is not a run id`);
  const folder = await folderProblem(workspace, path.join('runs', id));
  if (folder) {
    if (isMissing(folder)) throw new ApiError('E_BAD_INPUT', `there is no run ${id} in the workspace (trainbench runs lists them)`);
    throw new ApiError('E_DATA', `run ${id} cannot be read: ${folder.message}`);
  }
  const { record, problem } = await readRun(workspace, id);
  if (!record) throw new ApiError('E_DATA', `run ${id} cannot be read: ${problem}`);
  return record;
}
