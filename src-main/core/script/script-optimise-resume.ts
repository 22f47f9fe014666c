import { promises as fs } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import type { OptimiseTrial } from '../../api/optimise';
import type { ScriptOptimiseRecord, ScriptOptimiseRequest, ScriptOverrides } from '../../api/script-target';
import { ScriptOptimiseRecordSchema } from '../../api/script-target';
import { writeJsonAtomic } from '../atomic-write';
import { readRunDetail } from '../run-reader';
import type { RunRecord } from '../run-store';
import type { Workspace } from '../workspace';

/** In the run's folder, rewritten after the baseline and after every trial: what a killed wizard had measured. */
export const SCRIPT_WIZARD_STATE = 'state.json';

export function saveScriptWizardState(run: RunRecord, record: ScriptOptimiseRecord): Promise<void> {
  return writeJsonAtomic(path.join(run.dir, SCRIPT_WIZARD_STATE), record);
}

/**
 * What a stopped script optimisation had measured, for `resumeFrom`: its state file (written after
 * every trial, so a killed process loses only the trial in flight), else the result its run recorded.
 * Refused, with the reason, when the run still runs, finished, or optimised another command.
 */
export async function loadScriptWizardState(workspace: Workspace, runId: string, request: ScriptOptimiseRequest): Promise<ScriptOptimiseRecord> {
  const detail = await readRunDetail(workspace, runId);
  const config = (detail.record as { config?: { target?: unknown } }).config;
  if (detail.summary.kind !== 'optimise' || (config?.target as { kind?: unknown } | undefined)?.kind !== 'script') {
    throw new ApiError('E_BAD_INPUT', `run ${runId} is not a script optimisation (it is a run of kind ${detail.summary.kind}): nothing to resume`);
  }
  if (detail.summary.status === 'running') throw new ApiError('E_BAD_INPUT', `script optimisation ${runId} is still running: cancel it first, or wait for it to end`);
  if (detail.summary.status === 'completed') throw new ApiError('E_BAD_INPUT', `script optimisation ${runId} completed: there is nothing left to resume`);
  const file = path.join(workspace.resolve(path.join('runs', runId)), SCRIPT_WIZARD_STATE);
  const text = await fs.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? null : Promise.reject(err)));
  let saved: unknown = (detail.record as { result?: unknown }).result ?? null;
  if (text !== null) {
    try {
      saved = JSON.parse(text);
    } catch (err) {
      throw new ApiError('E_DATA', `the saved state of script optimisation ${runId} (${file}) is not JSON: ${(err as Error).message}`);
    }
  }
  // Stopped before its baseline was measured: nothing to keep, the wizard starts over.
  if (saved === null) return emptyRecord(runId, request);
  const parsed = ScriptOptimiseRecordSchema.safeParse(saved);
  if (!parsed.success) throw new ApiError('E_DATA', `the saved state of script optimisation ${runId} does not match the schema: ${formatIssues(parsed.error, 'state')}`);
  if (JSON.stringify(parsed.data.target) !== JSON.stringify(request.target)) {
    throw new ApiError('E_BAD_INPUT', `script optimisation ${runId} measured another command (${parsed.data.title} in ${parsed.data.target.cwd}): resume it with its own target`);
  }
  return parsed.data;
}

function emptyRecord(runId: string, request: ScriptOptimiseRequest): ScriptOptimiseRecord {
  return { runId, runDir: '', title: '', target: request.target, preset: request.preset, repeat: request.repeat, loader: null, baseline: null, trials: [], skipped: [], final: null, seconds: 0 };
}

/**
 * The coordinate ascent's position after these trials, as the wizard had it: the best overrides (the
 * start with every kept change applied, in order) and the knobs tried since the last kept change.
 */
export function replayTrials(start: ScriptOverrides, trials: readonly OptimiseTrial[]): { best: ScriptOverrides; exhausted: Set<string> } {
  let best: ScriptOverrides = { ...start };
  let exhausted = new Set<string>();
  for (const t of trials) {
    if (t.kept) {
      best = { ...best, [t.change.knob]: t.change.to };
      exhausted = new Set();
    } else {
      exhausted.add(t.change.knob);
    }
  }
  return { best, exhausted };
}
