import { SIZED_PREFIX, sizedFamilyOf } from '@api/model-sizing';
import type { BuiltinModelName } from '@api/model-spec';
import { BUILTIN_MODELS, isBuiltinModel } from '@api/model-spec';
import type { OptimiseConfig, OptimiseRequest } from '@api/optimise';

import { builtinModelOf, dataChoiceOf } from '../../composables/useTargetChoices';
import type { ModelChoices } from '../../view-models/model-choice';
import { modelChoiceOf, unchoosableModel } from '../../view-models/model-choice';
import type { NewRunValues } from '../runs/new-run-values';
import { recipeValues } from '../runs/new-run-values';

/**
 * "Apply": an optimisation's final settings handed to the New run form through the route
 * (`/runs?new=1&...`), so the link can be opened, bookmarked or typed, and the Runs area reads
 * it with newRunValuesFromQuery.
 */

export { builtinModelOf, unchoosableModel };

/** The route query, as vue-router gives it. */
export type RouteQuery = Record<string, string | null | (string | null)[] | undefined>;

export type ApplyQuery = { query: Record<string, string>; blocked: null } | { query: null; blocked: string };

/**
 * The route query that opens the New run form with the final configuration. `blocked` says why it
 * cannot be done (a model or data the form cannot choose), so the button can say so.
 */
export function applyQuery(jobId: string, target: Pick<OptimiseRequest['target'], 'spec' | 'data'>, config: OptimiseConfig, choices: ModelChoices): ApplyQuery {
  const data = dataChoiceOf(target.data);
  if (!data) return { query: null, blocked: `the data (${target.data.kind}) was given to the CLI by path; the New run form offers cached datasets only: cache it in Datasets first` };
  const model = modelChoiceOf(target.spec, data, choices.datasets, choices.models);
  if (!model) return { query: null, blocked: unchoosableModel(target.spec) };
  const o = config.options;
  const query: Record<string, string> = {
    new: '1',
    from: jobId,
    model,
    data,
    device: o.device,
    precision: o.precision,
    batchSize: String(o.batchSize),
    accumulation: String(o.accumulation),
    loaderWorkers: String(o.loaderWorkers),
    prefetch: String(o.prefetch),
    seed: String(o.seed),
  };
  // Settings the New run form has no field for, carried so the form can say they were not taken over.
  if (o.device.startsWith('cuda')) {
    query.gpuPrefetch = String(o.gpuPrefetch);
    if (o.cudaGraph) query.cudaGraph = '1';
  }
  if (config.readFrom === 'source') query.readFrom = 'source';
  // A spec file's recipe is its family's: said, so the form opens with it before the file is read.
  if (!isBuiltinModel(model) && !sizedFamilyOf(model)) query.family = target.spec.family;
  return { query, blocked: null };
}

/** What the New run form takes from the route, and what it could not take, in words. */
export interface QueryValues {
  values: NewRunValues;
  /** The optimisation (or batch-size search) the values came from, when the link names one. */
  from: string | null;
  /** Where they came from, in words ("optimisation <id>", "batch-size search <id>"); null when the link names nothing. */
  source: string | null;
  /** Each value not taken over and why (a bad value keeps the recipe's, named here). */
  notes: string[];
}

const one = (q: RouteQuery, key: string): string | null => {
  const v = q[key];
  return Array.isArray(v) ? (v[v.length - 1] ?? null) : (v ?? null);
};

/** Looks like a spec file the model list names (a .json path); models.readSpec keeps it inside the workspace and names what is wrong. */
const SPEC_FILE = /^[^/\\][^\0]*\.json$/;
const INTEGER_FIELDS = ['batchSize', 'accumulation', 'epochs', 'maxSteps', 'loaderWorkers', 'prefetch', 'seed'] as const;
const PRECISIONS = ['fp32', 'bf16', 'fp16'] as const;
const OPTIMIZERS = ['sgd', 'adamw'] as const;

/**
 * The New run form's values from a route query written by applyQuery (or typed by hand): the
 * model's recipe, with every value the query gives that is well formed. Null when the query does
 * not ask for a new run (`new=1`). Ranges are left to the form's own check (trainRequest), which
 * names the field; here a value that is not even a number is refused and named in `notes`.
 */
export function newRunValuesFromQuery(query: RouteQuery): QueryValues | null {
  if (one(query, 'new') !== '1') return null;
  const notes: string[] = [];
  const modelText = one(query, 'model');
  let model = 'mlp';
  let family: BuiltinModelName | null = null;
  if (modelText !== null) {
    const familyText = one(query, 'family');
    const sized = sizedFamilyOf(modelText);
    if (isBuiltinModel(modelText)) model = modelText;
    else if (sized) [model, family] = [modelText, sized];
    // A spec file: the form reads it (and names it if it cannot); its recipe is its family's.
    else if (SPEC_FILE.test(modelText) && familyText !== null && isBuiltinModel(familyText)) [model, family] = [modelText, familyText];
    else notes.push(`model ${JSON.stringify(modelText)} is not a built-in (${Object.keys(BUILTIN_MODELS).join(', ')}), ${SIZED_PREFIX}<family> or a spec file with its family; the form keeps ${model}`);
  }
  const data = one(query, 'data');
  const dataOk = data !== null && (data === 'fashion-mnist' || data === 'example-board' || /^dataset:.+/.test(data));
  if (data !== null && !dataOk) notes.push(`data ${JSON.stringify(data)} is not fashion-mnist, example-board or dataset:<id>; the form keeps fashion-mnist`);
  const device = one(query, 'device');
  const values = recipeValues(model, { data: dataOk ? data : 'fashion-mnist', device: device || 'cpu' }, family);

  for (const key of INTEGER_FIELDS) {
    const text = one(query, key);
    if (text === null) continue;
    const n = Number(text);
    if (text.trim() !== '' && Number.isInteger(n)) values[key] = n;
    else notes.push(`${key} ${JSON.stringify(text)} is not a whole number; the form keeps ${values[key]}`);
  }
  const lr = one(query, 'lr');
  if (lr !== null) {
    const n = Number(lr);
    if (lr.trim() !== '' && Number.isFinite(n)) values.lr = n;
    else notes.push(`lr ${JSON.stringify(lr)} is not a number; the form keeps ${values.lr}`);
  }
  const precision = one(query, 'precision');
  if (precision !== null) {
    if (precision !== 'fp32' && values.device === 'cpu' && (PRECISIONS as readonly string[]).includes(precision)) notes.push(`precision ${precision} needs a CUDA device and this run is on the CPU; the form keeps ${values.precision}`);
    else if ((PRECISIONS as readonly string[]).includes(precision)) values.precision = precision as NewRunValues['precision'];
    else notes.push(`precision ${JSON.stringify(precision)} is not one of ${PRECISIONS.join(', ')}; the form keeps ${values.precision}`);
  }
  const optimizer = one(query, 'optimizer');
  if (optimizer !== null) {
    if ((OPTIMIZERS as readonly string[]).includes(optimizer)) values.optimizer = optimizer as NewRunValues['optimizer'];
    else notes.push(`optimizer ${JSON.stringify(optimizer)} is not one of ${OPTIMIZERS.join(', ')}; the form keeps ${values.optimizer}`);
  }

  const gpuPrefetch = one(query, 'gpuPrefetch');
  if (gpuPrefetch !== null) notes.push(`GPU prefetch ${gpuPrefetch} was not taken over: the New run form has no field for it (a run uses the engine's default)`);
  if (one(query, 'cudaGraph') === '1') notes.push('CUDA graphs were not taken over: the New run form has no field for them');
  if (one(query, 'readFrom') === 'source') notes.push('the optimisation read the data from its source files; a run always reads it through the cache');
  const from = one(query, 'from');
  const source = from === null ? null : `${one(query, 'fromKind') === 'batch-search' ? 'batch-size search' : 'optimisation'} ${from}`;
  return { values, from, source, notes };
}
