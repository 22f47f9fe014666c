import path from 'node:path';

import { ApiError } from '../../api/errors';
import { ID_PATTERN } from '../../api/ids';
import type { RunRecordJson } from '../../api/run-record';
import { parseRunRecord } from '../../api/run-record';
import { jsonShapeProblem } from './json-depth';
import type { Workspace } from './workspace';
import { folderProblem, isMissing, MiB, readTextCapped } from './workspace-files';

// A run's own file, run.json, read through its schema; and the check every request that names one run makes
// first, so that runs.get and runs.annotate say the same of a run that is missing, a link or unreadable.

/**
 * run.json holds a config and a result (a trial table, 2,000 curve points, 200 output lines at most): far below
 * this. Every concurrent runs.get parses one whole, so the cap bounds each request's memory (a planted 16 MiB
 * file held by a thousand requests at once grew the server past its heap).
 */
const MAX_RUN_JSON_BYTES = 4 * MiB;
/**
 * Nesting run.json never comes near (a config is a few levels deep); a file nested deeper is not one
 * Trainbench wrote, and would overflow the stack of whatever walks it (a 100,000-deep config did).
 */
const MAX_RUN_JSON_DEPTH = 256;

/** run.json through its schema: the record, or the problem in words. */
export async function readRun(workspace: Workspace, id: string): Promise<{ record: RunRecordJson; problem: null } | { record: null; problem: string }> {
  let text: string;
  try {
    text = await readTextCapped(workspace, path.join('runs', id, 'run.json'), MAX_RUN_JSON_BYTES);
  } catch (err) {
    return { record: null, problem: `cannot read runs/${id}/run.json: ${(err as Error).message}` };
  }
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
  if (!ID_PATTERN.test(id)) throw new ApiError('E_BAD_INPUT', `${JSON.stringify(id.slice(0, 80))} is not a run id`);
  const folder = await folderProblem(workspace, path.join('runs', id));
  if (folder) {
    if (isMissing(folder)) throw new ApiError('E_BAD_INPUT', `there is no run ${id} in the workspace (trainbench runs lists them)`);
    throw new ApiError('E_DATA', `run ${id} cannot be read: ${folder.message}`);
  }
  const { record, problem } = await readRun(workspace, id);
  if (!record) throw new ApiError('E_DATA', `run ${id} cannot be read: ${problem}`);
  return record;
}
