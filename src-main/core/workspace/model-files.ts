import path from 'node:path';

import { ApiError } from '../../api/errors';
import { printable } from '../../api/shell-word';
import { formatIssues, jsonProblem } from '../../api/format-issues';
import type { ModelEntry } from '../../api/model-files';
import { MODEL_SPEC_DIR } from '../../api/model-files';
import type { ModelSpec } from '../../api/model-spec';
import type { SaveSpecRequest } from '../../api/model-sizing';
import { MODEL_NAME_PATTERN, SaveSpecRequestSchema } from '../../api/model-sizing';
import { BUILTIN_MODELS, ModelSpecSchema } from '../../api/model-spec';
import type { Workspace } from './workspace';
import { entryKind, entryProblem, isMissing, listFolder, makeFolder, readTextCapped, WorkspaceFileError, writeFileConfined, writeNewFileConfined } from './workspace-files';
import { jsonShapeProblem } from './json-depth';
import { quotedText } from '../../api/shell-word';
import { LIST_READS_AT_ONCE, mapAtOnce } from '../common/map-at-once';

/** A spec file larger than this is not a model spec (the largest real one is a few hundred bytes). */
const MAX_SPEC_BYTES = 256 * 1024;
/** Folders below models/ that are searched: enough for models/<project>/<spec>.json. */
const MAX_DEPTH = 2;

/** Nesting a model spec never comes near: the deepest is a family's list of lists, three levels. */
const MAX_SPEC_DEPTH = 32;

/** A spec's text checked against the contract; the error names the file and the bad field. */
export function parseModelSpec(text: string, name: string): ModelSpec {
  // A spec is a few levels deep; one nested far deeper is no spec (its schema check said only "Invalid input").
  const shape = jsonShapeProblem(text, MAX_SPEC_DEPTH);
  if (shape) throw new ApiError('E_BAD_INPUT', `model spec ${name} is ${shape}: not a model spec`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ApiError('E_BAD_INPUT', `model spec ${name} is ${jsonProblem(err)}`);
  }
  const parsed = ModelSpecSchema.safeParse(raw);
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `model spec ${name} is invalid: ${formatIssues(parsed.error, 'spec')}`);
  return parsed.data;
}

/** Whether parsed JSON claims to be a model spec (other JSON files of the workspace are not listed). */
function looksLikeSpec(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) && 'family' in raw;
}

/** JSON files below relDir, and the entries that cannot be used (a link, a special file) with their problem. */
async function jsonFilesUnder(workspace: Workspace, relDir: string, depth: number): Promise<{ files: string[]; problems: ModelEntry[] }> {
  const entries = await listFolder(workspace, relDir).catch(() => []);
  const files: string[] = [];
  const problems: ModelEntry[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const rel = path.join(relDir, entry.name);
    if (entry.kind === 'dir' && depth > 0) {
      const below = await jsonFilesUnder(workspace, rel, depth - 1);
      files.push(...below.files);
      problems.push(...below.problems);
    } else if (entry.name.endsWith('.json')) {
      const problem = entryProblem(entry, 'file');
      if (problem) problems.push({ name: rel, source: 'workspace', family: null, problem });
      else files.push(rel);
    }
  }
  return { files, problems };
}

/** One spec file as the models list shows it: its family, or why it cannot be used. */
async function entryOf(workspace: Workspace, rel: string): Promise<ModelEntry | null> {
  let text: string;
  try {
    text = await readTextCapped(workspace, rel, MAX_SPEC_BYTES);
  } catch (err) {
    return { name: rel, source: 'workspace', family: null, problem: `cannot read ${rel}: ${(err as Error).message}` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // Under models/ every JSON file is meant as a spec; elsewhere a broken file is none of ours.
    return rel.startsWith(MODEL_SPEC_DIR + path.sep) ? { name: rel, source: 'workspace', family: null, problem: `model spec ${rel} is ${jsonProblem(err)}` } : null;
  }
  if (!looksLikeSpec(raw)) return null;
  const family = String((raw as { family: unknown }).family);
  try {
    return { name: rel, source: 'workspace', family, problem: null, spec: parseModelSpec(text, rel) };
  } catch (err) {
    return { name: rel, source: 'workspace', family, problem: (err as Error).message };
  }
}

/** The built-in models, then every model spec file in the workspace's top folder and under models/. */
export async function listModels(workspace: Workspace): Promise<ModelEntry[]> {
  const builtins: ModelEntry[] = Object.entries(BUILTIN_MODELS).map(([name, spec]) => ({ name, source: 'builtin', family: spec.family, problem: null }));
  const top = await jsonFilesUnder(workspace, '', 0);
  const below = await jsonFilesUnder(workspace, MODEL_SPEC_DIR, MAX_DEPTH);
  const files = await mapAtOnce([...top.files.filter((r) => r !== 'workspace.json'), ...below.files], () => LIST_READS_AT_ONCE, async (rel): Promise<ModelEntry | null> => {
    // A name with control characters is listed escaped, as one that cannot be chosen (it would redraw a terminal).
    if (printable(rel) !== rel) return { name: printable(rel), source: 'workspace', family: null, problem: 'its file name has control characters: rename the file to use it' };
    const entry = await entryOf(workspace, rel);
    return entry && { ...entry, family: entry.family === null ? null : printable(entry.family), problem: entry.problem === null ? null : printable(entry.problem) };
  });
  return [...builtins, ...top.problems, ...below.problems, ...files.filter((e): e is ModelEntry => e !== null)];
}

/** A spec file of the workspace, checked against the contract. */
export async function readModelSpec(workspace: Workspace, rel: string): Promise<{ path: string; spec: ModelSpec }> {
  if (!rel.endsWith('.json')) throw new ApiError('E_BAD_INPUT', `model spec ${JSON.stringify(rel)} is not a .json file`);
  const abs = workspace.resolve(rel);
  let text: string;
  try {
    text = await readTextCapped(workspace, abs, MAX_SPEC_BYTES);
  } catch (err) {
    if (isMissing(err)) throw new ApiError('E_BAD_INPUT', `there is no model spec file ${rel} in the workspace`);
    if (err instanceof WorkspaceFileError) throw new ApiError('E_BAD_INPUT', `model spec ${rel}: ${err.message}`);
    throw err;
  }
  return { path: path.relative(workspace.root, abs), spec: parseModelSpec(text, rel) };
}

/** The file a saved spec's name becomes: models/<name>.json (the name is checked again here, as every name is before it becomes a path). */
export function savedSpecPath(name: string): string {
  if (!MODEL_NAME_PATTERN.test(name)) {
    throw new ApiError('E_BAD_INPUT', `${quotedText(name, 80)} is not a model name: letters, digits, '-' and '_', optionally ending in .json`);
  }
  return path.join(MODEL_SPEC_DIR, name.endsWith('.json') ? name : `${name}.json`);
}

/**
 * The spec saved under `name` (models/<name>.json, as `models size --save` and the forms write it), or null
 * when nothing is at that name or the name is no saved spec's name (a path): the caller then tries it as a
 * path. Anything else at the name (a link, a folder, a bad spec) is an error naming it.
 */
export async function readSavedSpec(workspace: Workspace, name: string): Promise<{ path: string; spec: ModelSpec } | null> {
  if (!MODEL_NAME_PATTERN.test(name)) return null;
  const rel = savedSpecPath(name);
  const kind = await entryKind(workspace, rel);
  if (kind === null) return null;
  if (kind !== 'file') throw new ApiError('E_BAD_INPUT', `${rel} is ${kind === 'link' ? 'a link' : kind === 'dir' ? 'a folder' : 'a special file'}, not a saved model spec: a spec is read only as a file of its own`);
  return readModelSpec(workspace, rel);
}

/** The names specs are saved under (models/<name>.json, sorted), at most `limit` of them, and how many there are in all. */
export async function savedSpecNames(workspace: Workspace, limit: number): Promise<{ names: string[]; total: number }> {
  const entries = await listFolder(workspace, MODEL_SPEC_DIR).catch(() => []);
  const names = entries.filter((e) => e.kind === 'file' && e.name.endsWith('.json') && MODEL_NAME_PATTERN.test(e.name)).map((e) => e.name.slice(0, -'.json'.length));
  return { names: names.slice(0, limit), total: names.length };
}

/**
 * models.save: writes a spec under models/ (created when missing), checked against the contract
 * first. An existing file is refused unless `overwrite`; a link, a folder or a special file at the
 * name is always refused (never written through, never replaced).
 */
export async function saveModelSpec(workspace: Workspace, request: SaveSpecRequest): Promise<{ path: string; spec: ModelSpec }> {
  const { name, spec, overwrite } = SaveSpecRequestSchema.parse(request);
  const rel = savedSpecPath(name);
  const checked = ModelSpecSchema.parse(spec);
  await makeFolder(workspace, MODEL_SPEC_DIR);
  const text = JSON.stringify(checked, null, 2) + '\n';
  if (text.length > MAX_SPEC_BYTES) throw new ApiError('E_BAD_INPUT', `model spec ${rel} would be ${text.length} bytes, more than the ${MAX_SPEC_BYTES} a spec may have`);
  const kind = await entryKind(workspace, rel);
  if (kind === 'link') throw new ApiError('E_BAD_INPUT', `${rel} is a link: a spec is saved only as a file of its own (remove the link or choose another name)`);
  if (kind === 'dir' || kind === 'other') throw new ApiError('E_BAD_INPUT', `${rel} is ${kind === 'dir' ? 'a folder' : 'a special file'}: choose another name`);
  const taken = () => new ApiError('E_BAD_INPUT', `${rel} exists already: choose another name, or ask to replace it`);
  if (kind === 'file' && !overwrite) throw taken();
  if (overwrite) await writeFileConfined(workspace, rel, text);
  else
    await writeNewFileConfined(workspace, rel, text).catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'EEXIST' ? taken() : err;
    });
  return { path: rel, spec: checked };
}
