import type { BuiltinModelName, ModelSpec } from '@api/model-spec';
import { BUILTIN_MODELS, isBuiltinModel, ModelSpecSchema } from '@api/model-spec';
import { issueWords } from '@api/format-issues';
import { RECIPES } from '@api/recipes';
import { ScriptTrainRequestSchema, type ScriptTrainRequestInput } from '@api/script-target';
import type { DatasetSummary } from '@api/datasets';
import { testSetProblem } from '@api/datasets';
import type { DataSource, TrainRequest } from '@api/training';
import { TrainRequestSchema } from '@api/training';
import { dataChoiceOf, dataSourceOf } from '../../composables/useTargetChoices';
import type { ModelChoices } from '../../view-models/model-choice';
import { modelChoiceOf } from '../../view-models/model-choice';
import type { ScriptForm } from '../../view-models/script-target-form';
import { scriptRequestFromForm } from '../../view-models/script-target-form';

/** What the New run form holds; `trainRequest` turns it into a train.run request. */
export interface NewRunValues {
  /** A built-in model's name, or a workspace spec file's path (from models.list). */
  model: string;
  /** 'fashion-mnist', 'example-board' or 'dataset:<id>'. */
  data: string;
  /**
   * The test set of a workspace dataset: a dataset id, or '' for none. Unset until the form chooses its default
   * (the dataset's held-out split, see defaultTestChoice); the built-in data bring their own and ignore it.
   */
  test?: string;
  device: string;
  precision: 'fp32' | 'bf16' | 'fp16';
  batchSize: number;
  accumulation: number;
  epochs: number;
  /** 0: all steps of every epoch. */
  maxSteps: number;
  optimizer: 'sgd' | 'adamw';
  lr: number;
  loaderWorkers: number;
  prefetch: number;
  seed: number;
}
export type NewRunField = keyof NewRunValues;

/** The recipe for a model: a built-in's own, or for a spec file the recipe of its family (every family is a built-in's). */
function recipeOf(model: string, family: BuiltinModelName | null) {
  return RECIPES[isBuiltinModel(model) ? model : (family ?? 'mlp')];
}

/**
 * The form's values for a model: its recipe, and the contract's defaults for what the recipe
 * leaves out. `family` is a spec file's family (null for a built-in).
 */
export function recipeValues(model: string, keep: Pick<NewRunValues, 'data' | 'device'>, family: BuiltinModelName | null = null): NewRunValues {
  const r = recipeOf(model, family);
  return {
    model,
    ...keep,
    precision: 'fp32',
    batchSize: r.batchSize ?? 64,
    accumulation: r.accumulation ?? 1,
    epochs: r.epochs ?? 1,
    maxSteps: r.maxSteps ?? 0,
    optimizer: r.optimizer?.kind ?? 'sgd',
    lr: r.optimizer?.lr ?? 0.01,
    loaderWorkers: r.loaderWorkers ?? 1,
    prefetch: r.prefetch ?? 2,
    seed: r.seed ?? 0,
  };
}

/**
 * A spec file's recipe arrives after its file is read: it fills only the fields still as they were when
 * the file was chosen, so a value a person typed meanwhile (a step limit, a batch) is not undone.
 */
export function recipeOverUntouched(recipe: NewRunValues, chosenWith: NewRunValues, now: NewRunValues): Partial<NewRunValues> {
  const out: Partial<NewRunValues> = {};
  for (const key of Object.keys(recipe) as NewRunField[]) {
    if (now[key] === chosenWith[key]) (out as Record<string, unknown>)[key] = recipe[key];
  }
  return out;
}

/**
 * The form's values a running job's request was made with (a run re-attached after a reload or from another
 * window), so the greyed-out form shows what runs. The model and data are the form's choices that give the
 * request's again; where the form has none (a spec or files given to the CLI) `keep`'s stay.
 */
export function newRunValuesOf(request: TrainRequest, choices: ModelChoices, keep: Pick<NewRunValues, 'model' | 'data'>): NewRunValues {
  const data = dataChoiceOf(request.data) ?? keep.data;
  const o = request.options;
  return {
    model: modelChoiceOf(request.spec, data, choices.datasets, choices.models) ?? keep.model,
    data,
    test: request.data.kind === 'dataset' ? (request.data.test ?? '') : undefined,
    device: o.device,
    precision: o.precision,
    batchSize: o.batchSize,
    accumulation: o.accumulation,
    epochs: o.epochs,
    maxSteps: o.maxSteps,
    optimizer: o.optimizer.kind,
    lr: o.optimizer.lr,
    loaderWorkers: o.loaderWorkers,
    prefetch: o.prefetch,
    seed: o.seed,
  };
}

/** The schema path of each form field, to name a contract error next to its field. */
const FIELD_OF_PATH: Partial<Record<string, NewRunField>> = {
  'options.batchSize': 'batchSize',
  'options.accumulation': 'accumulation',
  'options.epochs': 'epochs',
  'options.maxSteps': 'maxSteps',
  'options.optimizer.lr': 'lr',
  'options.optimizer.kind': 'optimizer',
  'options.loaderWorkers': 'loaderWorkers',
  'options.prefetch': 'prefetch',
  'options.seed': 'seed',
  'options.device': 'device',
  'options.precision': 'precision',
  'data.train': 'data',
  'data.test': 'test',
};

/** A workspace dataset's source with the chosen test set ('' or unset: none); the built-in data keep their own. */
function withTestSet(data: DataSource, test: string | undefined): DataSource {
  return data.kind === 'dataset' && test ? { ...data, test } : data;
}

/** The workspace dataset a data choice names ('dataset:<id>'), when it is listed; null for the built-in data. */
function chosenDataset(data: string, datasets: readonly DatasetSummary[]): DatasetSummary | null {
  return data.startsWith('dataset:') ? (datasets.find((d) => `dataset:${d.id}` === data) ?? null) : null;
}

/**
 * The test set New run preselects for a data choice: the dataset's held-out split (from its import) when that
 * is listed, else none (''). Undefined while it cannot be told (the dataset is not listed yet) and for the
 * built-in data, which bring their own test set.
 */
export function defaultTestChoice(data: string, datasets: readonly DatasetSummary[]): string | undefined {
  const train = chosenDataset(data, datasets);
  if (!train) return undefined;
  const held = train.split?.part === 'train' ? train.split.other : null;
  return held && datasets.some((d) => d.id === held && d.problem === null) ? held : '';
}

/** A test set the form offers: a dataset id and how it reads in the list. */
export interface TestChoice {
  value: string;
  name: string;
  label: string;
  /** The chosen dataset's own held-out split. */
  heldOut: boolean;
}

/**
 * The test sets New run offers for a workspace dataset: its held-out split first, then every other dataset
 * stored like it (testSetProblem), so a test set imported from a second file can be chosen too. Empty for the
 * built-in data.
 */
export function testChoices(data: string, datasets: readonly DatasetSummary[]): TestChoice[] {
  const train = chosenDataset(data, datasets);
  if (!train) return [];
  const held = train.split?.part === 'train' ? train.split.other : null;
  const percent = (f: number) => `${+(f * 100).toFixed(2)}%`;
  return datasets
    .filter((d) => d.id !== train.id && d.problem === null && testSetProblem(train, d) === null)
    .map((d) => ({
      value: d.id,
      name: d.name,
      heldOut: d.id === held,
      label:
        d.id === held && d.split
          ? `held-out ${percent(d.split.fraction)}: ${d.name} (${d.records.toLocaleString()} records)`
          : `${d.name} (${d.records.toLocaleString()} records)`,
    }))
    .sort((a, b) => Number(b.heldOut) - Number(a.heldOut));
}

export type TrainRequestOrErrors = { request: TrainRequest; errors: null } | { request: null; errors: Partial<Record<NewRunField | 'form', string>> };

/**
 * Checks the values with the contract's own TrainRequestSchema (the one the CLI and the
 * service use), so the form refuses exactly what train.run would, naming the field.
 */
export function trainRequest(v: NewRunValues, fileSpec: ModelSpec | null = null): TrainRequestOrErrors {
  if (!isBuiltinModel(v.model) && !fileSpec) return { request: null, errors: { model: `${v.model} has not been read yet, or it is not a usable model spec` } };
  const recipe = recipeOf(v.model, fileSpec?.family ?? null);
  // The recipe's other optimizer settings (momentum, weight decay) apply only to its own optimizer.
  const optimizer = recipe.optimizer?.kind === v.optimizer ? { ...recipe.optimizer, lr: v.lr } : { kind: v.optimizer, lr: v.lr };
  const parsed = TrainRequestSchema.safeParse({
    spec: isBuiltinModel(v.model) ? ModelSpecSchema.parse(BUILTIN_MODELS[v.model]) : fileSpec,
    data: withTestSet(dataSourceOf(v.data), v.test),
    options: {
      ...(recipe.schedule ? { schedule: recipe.schedule } : {}),
      device: v.device,
      precision: v.precision,
      batchSize: v.batchSize,
      accumulation: v.accumulation,
      epochs: v.epochs,
      maxSteps: v.maxSteps,
      optimizer,
      loaderWorkers: v.loaderWorkers,
      prefetch: v.prefetch,
      seed: v.seed,
    },
  });
  if (parsed.success) return { request: parsed.data, errors: null };
  const errors: Partial<Record<NewRunField | 'form', string>> = {};
  for (const issue of parsed.error.issues) {
    const at = issue.path.join('.');
    const field: NewRunField | 'form' = FIELD_OF_PATH[at] ?? 'form';
    // The value as typed beside the rule it breaks, in words: "must be at least 1 (0 given)".
    const message = issueWords(issue);
    errors[field] ??= field === 'form' ? `${at}: ${message}` : `${message} (${JSON.stringify(v[field])} given)`;
  }
  return { request: null, errors };
}

/**
 * The train.run request of a script target the form describes: the command, folder, environment and
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

type FormErrors = Partial<Record<NewRunField | 'form', string>>;

/**
 * The errors shown that are still true now (`now`: the form checked again), each in its current words; a field
 * fixed since loses its error. `unjudged` keys keep theirs (a check that cannot be repeated here, like reading a file).
 */
export function errorsStillTrue(shown: FormErrors, now: FormErrors, unjudged: readonly (NewRunField | 'form')[] = []): FormErrors {
  const out: FormErrors = {};
  for (const key of Object.keys(shown) as (NewRunField | 'form')[]) {
    const text = unjudged.includes(key) ? shown[key] : now[key];
    if (text) out[key] = text;
  }
  return out;
}
