import type { BatchSearchRequest, BatchSearchResult } from '@api/batch-size';
import type { BuiltinModelName } from '@api/model-spec';
import type { ScriptOverrideKey } from '@api/script-target';

import { dataChoiceOf } from '../composables/useTargetChoices';
import type { ModelChoices } from './model-choice';
import { modelChoiceOf, unchoosableModel } from './model-choice';
import type { ScriptForm } from './script-target-form';
import { scriptFieldsOf } from './script-target-form';

/** What a batch-size search's answer puts into the New run and Optimise forms: the batch, and what it was found for. */
export interface BatchApplyValues {
  /** The search's run, named in the forms' "settings from" line. */
  runId: string;
  /** A model select value: a built-in's name, 'sized:<family>' or a workspace spec file's path. */
  model: string;
  /** The model's family, whose recipe the forms fill in. */
  family: BuiltinModelName;
  /** A data select value (useTargetChoices). */
  data: string;
  /** The device the search measured (an `auto` request's resolved one). */
  device: string;
  batchSize: number;
  /** Above 1 only where a global batch was asked for: the micro-batch's accumulation that makes it up. */
  accumulation: number;
  /** The CPU memory limit the search filled, for Optimise's own batch search; null on a GPU. */
  memoryLimitMiB: number | null;
  /**
   * The learning rate scaled with the batch as the verdict says (linear scaling from the request's batch, the
   * one its LR was tuned for), for New run; null when it stays. Optimise has no LR field: it measures speed.
   */
  lr: number | null;
}

export type BatchApply = { values: BatchApplyValues; blocked: null } | { values: null; blocked: string };

/**
 * The values "Apply" takes over from a finished search, or why it cannot (no batch fitted, a model or data
 * the forms cannot choose), so the button can say so. A global batch's split (micro-batch × accumulation) is
 * the answer where one was asked for; otherwise the recommended batch.
 */
export function batchApplyValues(request: Pick<BatchSearchRequest, 'spec' | 'data' | 'options'>, result: BatchSearchResult, choices: ModelChoices): BatchApply {
  const data = dataChoiceOf(request.data);
  if (!data) return { values: null, blocked: `the data (${request.data.kind}) was given to the CLI by path; the forms offer cached datasets only: cache it in Datasets first` };
  const model = modelChoiceOf(request.spec, data, choices.datasets, choices.models);
  if (!model) return { values: null, blocked: unchoosableModel(request.spec) };
  const t = result.target;
  if (t.kind !== 'engine') return { values: null, blocked: "a script's search: its batch is the script's own dataloader.batch_size" };
  const split = t.globalBatch;
  const batchSize = split ? split.microBatch : result.recommended;
  if (batchSize === null) return { values: null, blocked: 'no batch fitted: there is nothing to apply' };
  const accumulation = split ? split.accumulation : 1;
  const scale = (batchSize * accumulation) / request.options.batchSize;
  const lr = scale === 1 ? null : Number((request.options.optimizer.lr * scale).toPrecision(6));
  return {
    values: {
      runId: result.runId,
      model,
      family: request.spec.family,
      data,
      device: result.device,
      batchSize,
      accumulation,
      memoryLimitMiB: t.capacitySource === 'memory-limit' && result.capacityBytes !== null ? result.capacityBytes / 2 ** 20 : null,
      lr,
    },
    blocked: null,
  };
}

/** The route query that opens the New run form with the batch (read back by newRunValuesFromQuery). */
export function newRunQueryOf(v: BatchApplyValues): Record<string, string> {
  const query: Record<string, string> = { new: '1', from: v.runId, fromKind: 'batch-search', model: v.model, family: v.family, data: v.data, device: v.device, batchSize: String(v.batchSize), accumulation: String(v.accumulation) };
  if (v.lr !== null) query.lr = String(v.lr);
  return query;
}

/** The override a script's batch is set with: what the script's search varies, and what Apply sets. */
export const SCRIPT_BATCH_OVERRIDE: ScriptOverrideKey = 'dataloader.batch_size';

/** What a script's batch-size search puts into the New run and Optimise forms' Script target: its command, with the batch found. */
export interface ScriptBatchApplyValues {
  /** The search's run, named in the forms' "settings from" line. */
  runId: string;
  target: { command: readonly string[]; cwd: string; env?: Record<string, string> };
  /** The overrides every trial kept; the batch goes beside them. */
  overrides: Record<string, string | number | boolean>;
  batchSize: number;
}

export type ScriptBatchApply = { values: ScriptBatchApplyValues; blocked: null } | { values: null; blocked: string };

/** The values "Apply" takes over from a script's finished search (the recommended batch), or why it cannot. */
export function scriptBatchApplyValues(request: Pick<ScriptBatchApplyValues, 'target' | 'overrides'>, result: BatchSearchResult): ScriptBatchApply {
  if (result.target.kind !== 'script') return { values: null, blocked: "an engine search: its batch goes into the forms' engine target" };
  if (result.recommended === null) return { values: null, blocked: 'no batch fitted: there is nothing to apply' };
  return { values: { runId: result.runId, target: request.target, overrides: request.overrides, batchSize: result.recommended }, blocked: null };
}

/**
 * A Script target's form with the searched command, folder, environment and overrides, and the batch found as its
 * dataloader.batch_size override (the form's numbers, how it measures, stay its own).
 */
export function withScriptBatch(form: ScriptForm, v: ScriptBatchApplyValues): ScriptForm {
  const fields = scriptFieldsOf(v.target, v.overrides);
  const others = fields.overrides.filter((row) => row.key !== SCRIPT_BATCH_OVERRIDE);
  return { ...form, ...fields, overrides: [...others, { key: SCRIPT_BATCH_OVERRIDE, value: String(v.batchSize) }] };
}
