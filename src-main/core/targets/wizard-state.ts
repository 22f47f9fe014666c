// What a stopped wizard saved, for either target, and how it goes on: the engine's wizard keeps its state in
// optimise/<id>/state.json (a resumed wizard keeps one state across its runs); a script's keeps it in its run's
// folder (runs/<id>/state.json), and a resume starts a new run from it.
import path from 'node:path';

import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import { IdSchema } from '../../api/ids';
import type { OptimiseTrial, WizardState } from '../../api/optimise';
import { WizardStateSchema } from '../../api/optimise';
import type { ScriptOptimiseRecord } from '../../api/optimise-result';
import { OptimiseRecordSchema } from '../../api/optimise-result';
import type { ScriptOptimiseRequest, ScriptOverrides } from '../../api/script-target';
import { ScriptOptimiseRequestSchema, ScriptOverridesSchema } from '../../api/script-target';
import { printable } from '../../api/shell-word';
import { readRunDetail } from '../workspace/run-reader';
import type { RunRecord } from '../workspace/run-store';
import type { Workspace } from '../workspace/workspace';
import { isFolder, isMissing, makeFolder, MiB, readJsonCapped, writeJsonConfined } from '../workspace/workspace-files';

// The engine's wizard

/** Either target's saved state holds its request, trials and runs' ids: far below this. */
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

// A script's wizard

/** In the run's folder, rewritten after the baseline and after every trial: what a killed wizard had measured. */
export const SCRIPT_WIZARD_STATE = 'state.json';

export function saveScriptWizardState(run: RunRecord, record: ScriptOptimiseRecord): Promise<void> {
  return run.writeJson(SCRIPT_WIZARD_STATE, record);
}

/** A run of kind optimise whose target is a script, or E_BAD_INPUT naming what it is. */
async function scriptOptimiseDetail(workspace: Workspace, runId: string) {
  const detail = await readRunDetail(workspace, runId);
  const config = (detail.record as { config?: { target?: unknown } }).config;
  if (detail.summary.kind !== 'optimise' || (config?.target as { kind?: unknown } | undefined)?.kind !== 'script') {
    throw new ApiError('E_BAD_INPUT', `run ${runId} is not a script optimisation (it is a run of kind ${detail.summary.kind})`);
  }
  return detail;
}

/**
 * What a script optimisation has measured so far: its result once it completed, else its state file
 * (written after the baseline and every trial, so a running or killed wizard's trials are there too),
 * else what its run recorded when it stopped; null before its baseline was measured.
 */
export async function readScriptWizardState(workspace: Workspace, runId: string): Promise<ScriptOptimiseRecord | null> {
  return (await readState(workspace, runId, await scriptOptimiseDetail(workspace, runId))).record;
}

async function readState(workspace: Workspace, runId: string, detail: Awaited<ReturnType<typeof scriptOptimiseDetail>>) {
  const result = (detail.record as { result?: unknown }).result ?? null;
  const file = path.join('runs', runId, SCRIPT_WIZARD_STATE);
  let saved: unknown = result;
  if (detail.summary.status !== 'completed') {
    try {
      saved = await readJsonCapped(workspace, file, MAX_STATE_BYTES);
    } catch (err) {
      if (!isMissing(err)) throw new ApiError('E_DATA', `the saved state of script optimisation ${runId} cannot be read: ${(err as Error).message}`);
    }
  }
  if (saved === null) return { detail, record: null };
  // A record from before the wizard kept its status: the run's own says how it ended (an interrupted one failed).
  if (typeof saved === 'object' && !('status' in saved)) {
    const s = detail.summary.status;
    saved = { ...saved, status: s === 'completed' || s === 'cancelled' || s === 'running' ? s : 'failed' };
  }
  const parsed = OptimiseRecordSchema.safeParse(saved);
  if (!parsed.success) throw new ApiError('E_DATA', `the saved state of script optimisation ${runId} does not match the schema: ${formatIssues(parsed.error, 'state')}`);
  const record = parsed.data;
  if (record.target.kind !== 'script') throw new ApiError('E_DATA', `the saved state of script optimisation ${runId} names the engine as its target`);
  return { detail, record: { ...record, target: record.target } };
}

/**
 * What a stopped script optimisation had measured, for `resumeFrom`. Refused, with the reason, when
 * the run still runs, finished, or optimised another command.
 */
export async function loadScriptWizardState(workspace: Workspace, runId: string, request: ScriptOptimiseRequest): Promise<ScriptOptimiseRecord> {
  const detail = await scriptOptimiseDetail(workspace, runId);
  if (detail.summary.status === 'running') throw new ApiError('E_BAD_INPUT', `script optimisation ${runId} is still running: cancel it first, or wait for it to end`);
  if (detail.summary.status === 'completed') throw new ApiError('E_BAD_INPUT', `script optimisation ${runId} completed: there is nothing left to resume`);
  const { record } = await readState(workspace, runId, detail);
  // Stopped before its baseline was measured: nothing to keep, the wizard starts over.
  if (record === null) return emptyRecord(runId, request);
  if (JSON.stringify(record.target.command) !== JSON.stringify(request.target)) {
    throw new ApiError('E_BAD_INPUT', `script optimisation ${runId} measured another command (${printable(record.title)} in ${printable(record.target.command.cwd)}): resume it with its own target`);
  }
  // The state decides the settings the wizard goes on with: only Trainbench's own keys and values, as a request's.
  const goesOn = ScriptOverridesSchema.safeParse(replayTrials(record.target.baseline.overrides as ScriptOverrides, record.trials).best);
  if (!goesOn.success) {
    throw new ApiError('E_DATA', `the saved state of script optimisation ${runId} (runs/${runId}/${SCRIPT_WIZARD_STATE}) goes on with settings Trainbench does not take: ${formatIssues(goesOn.error, 'overrides')}`);
  }
  return record;
}

function emptyRecord(runId: string, request: ScriptOptimiseRequest): ScriptOptimiseRecord {
  return {
    runId,
    runDir: '',
    title: '',
    jobId: runId,
    status: 'cancelled',
    diagnosis: null,
    limits: null,
    target: { kind: 'script', command: request.target, loader: null, baseline: { overrides: request.overrides }, final: null },
    preset: request.preset,
    repeat: request.repeat,
    baseline: null,
    trials: [],
    skipped: [],
    final: null,
    seconds: 0,
  };
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

/**
 * What the script optimisation run of this id measured so far (readScriptWizardState), or undefined when the
 * workspace has no such run or the run is not a script optimisation (another target's wizard may have the id).
 */
export async function savedScriptWizard(workspace: Workspace, runId: string): Promise<ScriptOptimiseRecord | null | undefined> {
  if (!(await isFolder(workspace, path.join('runs', runId)))) return undefined;
  try {
    return await readScriptWizardState(workspace, runId);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'E_BAD_INPUT' && /is not a script optimisation/.test(err.message)) return undefined;
    throw err;
  }
}

/** The request a stopped script optimisation run was started with, to go on from it (resumeFrom): its command and settings, as they were. */
export async function resumedScriptRequest(workspace: Workspace, runId: string): Promise<ScriptOptimiseRequest> {
  const detail = await scriptOptimiseDetail(workspace, runId);
  const request = ScriptOptimiseRequestSchema.safeParse((detail.record as { config?: { request?: unknown } }).config?.request);
  if (!request.success) throw new ApiError('E_BAD_INPUT', `run ${runId} is not a script optimisation (trainbench runs lists them): nothing to resume`);
  // Said before the command is shown for consent: there is nothing to agree to.
  if (detail.summary.status === 'completed') throw new ApiError('E_BAD_INPUT', `script optimisation ${runId} completed: there is nothing left to resume`);
  const { jobId: _jobId, ...asked } = request.data;
  return { ...asked, resumeFrom: runId };
}
