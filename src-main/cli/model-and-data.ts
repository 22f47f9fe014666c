import { existsSync, promises as fs, statSync } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import { MODEL_SPEC_DIR } from '../api/model-files';
import { builtinForData, inputAndHeadWords } from '../api/model-sizing';
import type { BuiltinModelName, ModelSpec } from '../api/model-spec';
import { BUILTIN_MODELS, isBuiltinModel, ModelSpecSchema } from '../api/model-spec';
import type { DataSource } from '../api/training';
import { resolveDataset } from '../core/datasets/cache-store';
import { readSavedSpec, savedSpecNames } from '../core/workspace/model-files';
import type { Workspace } from '../core/workspace/workspace';
import { defaultWorkspaceDir, openWorkspace } from '../core/workspace/workspace';
import { closestChoice } from './closest-choice';
import { UsageError } from './usage-error';

/** Saved specs named in an error for an unknown --model: enough to spot the one meant, never a screenful. */
const NAMES_SHOWN = 20;

/**
 * `--data`: "fashion-mnist" (Debian's package), "example-board" (built in), "dataset:<train>[,<test>]" for
 * caches in the workspace, a folder holding the four MNIST-style IDX files, or
 * "train-images,train-labels[,test-images,test-labels]".
 */
export function resolveData(value: string): DataSource {
  if (value === 'fashion-mnist') return { kind: 'fashion-mnist' };
  if (value === 'example-board') return { kind: 'example-board' };
  if (value.startsWith('dataset:')) {
    const [train, test] = value.slice('dataset:'.length).split(',');
    return { kind: 'dataset', train, test: test || undefined };
  }
  const parts = value.split(',');
  if (parts.length === 1 && existsSync(value) && statSync(value).isDirectory()) {
    return { kind: 'fashion-mnist', dir: path.resolve(value) };
  }
  if (parts.length === 2 || parts.length === 4) {
    const [images, labels, testImages, testLabels] = parts.map((p) => path.resolve(p));
    return {
      kind: 'idx',
      train: { images, labels },
      test: testImages ? { images: testImages, labels: testLabels } : undefined,
    };
  }
  throw new UsageError(
    `--data ${JSON.stringify(value)}: use "fashion-mnist", "example-board", "dataset:<train>[,<test>]", a folder of MNIST-style IDX files, or train-images,train-labels[,test-images,test-labels]`,
  );
}

const isFile = (p: string) => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

/** A spec file named by path (from here, else from the workspace), checked against the contract; null when there is none. */
async function specAtPath(value: string, workspaceDir: string): Promise<{ spec: ModelSpec; name: string } | { tried: string[] }> {
  const inWorkspace = path.isAbsolute(value) ? null : path.resolve(workspaceDir, value);
  const file = isFile(value) ? value : inWorkspace && isFile(inWorkspace) ? inWorkspace : null;
  if (!file) return { tried: [path.resolve(value), ...(inWorkspace ? [inWorkspace] : [])] };
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`model spec ${file} is not valid JSON: ${(err as Error).message}`);
  }
  const name = path.basename(file);
  const parsed = ModelSpecSchema.safeParse(raw);
  if (!parsed.success) throw new UsageError(`model spec ${name} is invalid: ${formatIssues(parsed.error, 'spec')}`);
  return { spec: parsed.data, name };
}

/** The error for a --model that is no built-in, no saved spec and no file: what there is, and where to see it all. */
async function unknownModel(value: string, workspace: Workspace, tried: string[]): Promise<ApiError> {
  const builtins = Object.keys(BUILTIN_MODELS);
  const saved = await savedSpecNames(workspace, NAMES_SHOWN);
  const more = saved.total > saved.names.length ? `, and ${saved.total - saved.names.length} more` : '';
  const savedWords = saved.total ? `${saved.names.join(', ')}${more}` : 'none yet: trainbench models size <family> --data <dataset> --save NAME saves one';
  const near = closestChoice(value, [...builtins, ...saved.names]);
  return new UsageError(
    `--model ${JSON.stringify(value)} is neither a built-in model (${builtins.join(', ')}), nor a spec saved in the workspace ${workspace.root} ` +
      `(${MODEL_SPEC_DIR}/<name>.json: ${savedWords}), nor a spec file (no file at ${tried.join(' or ')})` +
      `; ${near ? `did you mean ${JSON.stringify(near)}? ` : ''}trainbench models list shows every model there is`,
  );
}

/**
 * `--model`, in this order so a name means one thing: a built-in (mlp, cnn, bottleneck_resnet), then a spec
 * saved in the workspace under that name (models/<name>.json, as `models size --save` and the forms write it),
 * then a spec file by path (a relative one is also looked for in the workspace). Built-ins come first so a
 * file in a workspace cannot change what a documented name trains; the file stays reachable by its path.
 */
export async function resolveModel(value: string, workspace: Workspace): Promise<{ spec: ModelSpec; name: string; builtin: BuiltinModelName | null }> {
  if (isBuiltinModel(value)) return { spec: ModelSpecSchema.parse(BUILTIN_MODELS[value]), name: value, builtin: value };
  // A value that reads as a file ("foo.json", "specs/foo") is the file it names, as before saved names existed.
  const looksLikePath = value.endsWith('.json') || /[\\/]/.test(value);
  if (looksLikePath) {
    const file = await specAtPath(value, workspace.root);
    if (!('tried' in file)) return { ...file, builtin: null };
  }
  const saved = await readSavedSpec(workspace, value);
  if (saved) return { spec: saved.spec, name: value, builtin: null };
  const file = await specAtPath(value, workspace.root);
  if ('tried' in file) throw await unknownModel(value, workspace, file.tried);
  return { ...file, builtin: null };
}

const valuesOf = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** What to do when a model does not fit the data: the command that sizes one to it. */
const sizeHint = (data: string) => `size one to it: trainbench models size <family> --data ${data} --save NAME, then --model NAME`;

/**
 * `--model` for `--data`, the one place every command that takes both resolves them (train, benchmark-training,
 * find-batch-size, optimise). A built-in named with a dataset of the workspace that it cannot take is sized to
 * it, as New run sizes it (issue 41 item 9), and `note` says so; a saved or file spec is used as it is, but
 * one whose input cannot take the dataset is refused here, naming `models size`, not deep in the engine.
 */
export async function resolveModelAndData(
  modelFlag: string,
  dataFlag: string,
  workspaceDir: string = defaultWorkspaceDir(),
  note: (line: string) => void = (line) => process.stderr.write(line + '\n'),
): Promise<{ spec: ModelSpec; name: string; data: DataSource }> {
  const data = resolveData(dataFlag);
  const workspace = await openWorkspace(workspaceDir);
  const model = await resolveModel(modelFlag, workspace);
  if (model.builtin && (await readSavedSpec(workspace, modelFlag).catch(() => null))) {
    note(`--model ${modelFlag} is the built-in; the spec saved as ${MODEL_SPEC_DIR}/${modelFlag}.json trains with --model ${MODEL_SPEC_DIR}/${modelFlag}.json`);
  }
  if (data.kind !== 'dataset') return { spec: model.spec, name: model.name, data };

  const shown = `dataset:${data.train}`;
  const { manifest } = await resolveDataset(workspace, data.train);
  if (!model.builtin) {
    const x = manifest.fields.find((f) => f.name === 'x');
    if (x && valuesOf(x.shape) !== valuesOf(model.spec.input)) {
      throw new UsageError(
        `--model ${modelFlag} takes input [${model.spec.input.join(', ')}] (${valuesOf(model.spec.input)} values) but ${shown} has ${valuesOf(x.shape)} values per record in 'x': ${sizeHint(shown)}`,
      );
    }
    return { spec: model.spec, name: model.name, data };
  }
  const fit = builtinForData(model.builtin, manifest.fields);
  if (!fit.spec) {
    const mlp = model.builtin !== 'mlp' && builtinForData('mlp', manifest.fields).spec ? `train the mlp, which is sized to it (--model mlp), or ` : '';
    throw new UsageError(`--model ${modelFlag} cannot be sized to ${shown}: ${fit.problem}; ${mlp}${sizeHint(shown)}`);
  }
  if (fit.sized) {
    const was = inputAndHeadWords(model.spec);
    const now = fit.spec.family === 'bottleneck_resnet' ? fit.sized.summary : `input [${fit.spec.input.join(', ')}], ${inputAndHeadWords(fit.spec).head}`;
    note(`${model.builtin} sized to ${shown}: ${now} (the built-in ${model.builtin} takes ${was.input} and ${was.head})`);
  }
  // The family's name is kept: its recipe (batch, optimizer) suits the sized model as it does in New run.
  return { spec: fit.spec, name: model.name, data };
}
