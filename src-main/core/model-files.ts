import { promises as fs } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { ModelEntry } from '../api/model-files';
import { MODEL_SPEC_DIR } from '../api/model-files';
import type { ModelSpec } from '../api/model-spec';
import { BUILTIN_MODELS, ModelSpecSchema } from '../api/model-spec';
import type { Workspace } from './workspace';

/** A spec file larger than this is not a model spec (the largest real one is a few hundred bytes). */
const MAX_SPEC_BYTES = 256 * 1024;
/** Folders below models/ that are searched: enough for models/<project>/<spec>.json. */
const MAX_DEPTH = 2;

/** A spec's text checked against the contract; the error names the file and the bad field. */
export function parseModelSpec(text: string, name: string): ModelSpec {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ApiError('E_BAD_INPUT', `model spec ${name} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = ModelSpecSchema.safeParse(raw);
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `model spec ${name} is invalid: ${formatIssues(parsed.error, 'spec')}`);
  return parsed.data;
}

/** Whether parsed JSON claims to be a model spec (other JSON files of the workspace are not listed). */
function looksLikeSpec(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) && 'family' in raw;
}

async function jsonFilesUnder(workspace: Workspace, relDir: string, depth: number): Promise<string[]> {
  const names = await fs.readdir(workspace.resolve(relDir)).catch(() => [] as string[]);
  const out: string[] = [];
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const rel = path.join(relDir, name);
    let abs: string;
    try {
      abs = workspace.resolve(rel);
    } catch {
      continue; // a link leading outside the workspace
    }
    const stat = await fs.stat(abs).catch(() => null);
    if (stat?.isDirectory() && depth > 0) out.push(...(await jsonFilesUnder(workspace, rel, depth - 1)));
    else if (stat?.isFile() && name.endsWith('.json')) out.push(rel);
  }
  return out;
}

/** One spec file as the models list shows it: its family, or why it cannot be used. */
async function entryOf(workspace: Workspace, rel: string): Promise<ModelEntry | null> {
  let text: string;
  try {
    const abs = workspace.resolve(rel);
    if ((await fs.stat(abs)).size > MAX_SPEC_BYTES) return { name: rel, source: 'workspace', family: null, problem: `${rel} is larger than ${MAX_SPEC_BYTES} bytes, too large for a model spec` };
    text = await fs.readFile(abs, 'utf8');
  } catch (err) {
    return { name: rel, source: 'workspace', family: null, problem: `cannot read ${rel}: ${(err as Error).message}` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // Under models/ every JSON file is meant as a spec; elsewhere a broken file is none of ours.
    return rel.startsWith(MODEL_SPEC_DIR + path.sep) ? { name: rel, source: 'workspace', family: null, problem: `model spec ${rel} is not valid JSON: ${(err as Error).message}` } : null;
  }
  if (!looksLikeSpec(raw)) return null;
  const family = String((raw as { family: unknown }).family);
  try {
    parseModelSpec(text, rel);
    return { name: rel, source: 'workspace', family, problem: null };
  } catch (err) {
    return { name: rel, source: 'workspace', family, problem: (err as Error).message };
  }
}

/** The built-in models, then every model spec file in the workspace's top folder and under models/. */
export async function listModels(workspace: Workspace): Promise<ModelEntry[]> {
  const builtins: ModelEntry[] = Object.entries(BUILTIN_MODELS).map(([name, spec]) => ({ name, source: 'builtin', family: spec.family, problem: null }));
  const top = (await jsonFilesUnder(workspace, '', 0)).filter((rel) => rel !== 'workspace.json');
  const files = [...top, ...(await jsonFilesUnder(workspace, MODEL_SPEC_DIR, MAX_DEPTH))];
  const entries: ModelEntry[] = [];
  for (const rel of files) {
    const entry = await entryOf(workspace, rel);
    if (entry) entries.push(entry);
  }
  return [...builtins, ...entries];
}

/** A spec file of the workspace, checked against the contract. */
export async function readModelSpec(workspace: Workspace, rel: string): Promise<{ path: string; spec: ModelSpec }> {
  if (!rel.endsWith('.json')) throw new ApiError('E_BAD_INPUT', `model spec ${JSON.stringify(rel)} is not a .json file`);
  const abs = workspace.resolve(rel);
  const stat = await fs.stat(abs).catch(() => null);
  if (!stat?.isFile()) throw new ApiError('E_BAD_INPUT', `there is no model spec file ${rel} in the workspace ${workspace.root}`);
  if (stat.size > MAX_SPEC_BYTES) throw new ApiError('E_BAD_INPUT', `model spec ${rel} is ${stat.size} bytes, more than the ${MAX_SPEC_BYTES} a spec may have`);
  return { path: path.relative(workspace.root, abs), spec: parseModelSpec(await fs.readFile(abs, 'utf8'), rel) };
}
