import { createHash } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';

import type { CacheManifest, DatasetSummary } from '../../api/datasets';
import { CACHE_FORMAT_VERSION, CacheManifestSchema } from '../../api/datasets';
import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import type { Workspace } from '../workspace';
import { SHARD_HEADER_BYTES, SHARD_MAGIC } from './shard-layout';

export const DATASETS_DIR = 'datasets';
export const TMP_PREFIX = '.tmp-';

export function datasetsRoot(workspace: Workspace): string {
  return workspace.resolve(DATASETS_DIR);
}

/** Reads and validates manifest.json; E_DATA says exactly what is wrong. */
export async function readManifest(dir: string): Promise<CacheManifest> {
  const file = path.join(dir, 'manifest.json');
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ApiError('E_DATA', e.code === 'ENOENT' ? `${dir} has no manifest.json` : `${file} is not valid JSON: ${e.message}`);
  }
  const version = (raw as { formatVersion?: unknown })?.formatVersion;
  if (typeof version === 'number' && version > CACHE_FORMAT_VERSION) {
    throw new ApiError('E_DATA', `${file} was written by a newer Trainbench (cache format ${version}; this one reads ${CACHE_FORMAT_VERSION}): update Trainbench or rebuild the cache`);
  }
  const parsed = CacheManifestSchema.safeParse(raw);
  if (!parsed.success) throw new ApiError('E_DATA', `${file} is not a valid cache manifest: ${formatIssues(parsed.error, 'manifest')}`);
  return parsed.data;
}

/** The checks done on every open: shard files exist with the right size and header (not the checksums). */
export async function checkStructure(dir: string, m: CacheManifest): Promise<void> {
  let total = 0;
  for (const [i, s] of m.shards.entries()) {
    const file = path.join(dir, s.file);
    const stat = await fs.stat(file).catch(() => null);
    if (!stat) throw new ApiError('E_DATA', `${s.file} is missing from ${dir}`);
    if (stat.size !== s.bytes) throw new ApiError('E_DATA', `${s.file} is ${stat.size} bytes but the manifest says ${s.bytes} (truncated or replaced)`);
    const fh = await fs.open(file, 'r');
    try {
      const header = Buffer.alloc(SHARD_HEADER_BYTES);
      await fh.read(header, 0, SHARD_HEADER_BYTES, 0);
      if (!header.subarray(0, 8).equals(SHARD_MAGIC)) throw new ApiError('E_DATA', `${s.file} has no shard header (bad magic)`);
      if (header.readUInt32LE(12) !== i) throw new ApiError('E_DATA', `${s.file} says it is shard ${header.readUInt32LE(12)}, expected ${i}`);
      if (Number(header.readBigUInt64LE(16)) !== s.records) throw new ApiError('E_DATA', `${s.file}: header and manifest disagree on the record count`);
    } finally {
      await fh.close();
    }
    total += s.records;
  }
  if (total !== m.records) throw new ApiError('E_DATA', `the shards hold ${total} records but the manifest says ${m.records}`);
}

export function summarize(m: CacheManifest, problem: string | null): DatasetSummary {
  return {
    id: m.id,
    name: m.name,
    records: m.records,
    bytes: m.shards.reduce((a, s) => a + s.bytes, 0),
    shards: m.shards.length,
    fields: m.fields,
    createdAt: m.createdAt,
    sourceDescription: m.source.description,
    problem,
  };
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Leftovers of builds whose process is gone (killed or crashed): never valid, removed here. */
async function sweepAbandoned(root: string, name: string): Promise<void> {
  const dir = path.join(root, name);
  const owner = await fs.readFile(path.join(dir, '.owner'), 'utf8').catch(() => null);
  const pid = owner ? Number(JSON.parse(owner).pid) : NaN;
  if (Number.isInteger(pid) && pidAlive(pid)) return;
  await fs.rm(dir, { recursive: true, force: true });
}

/** Every cache in the workspace with its state; unreadable ones are listed with the problem, never fatal. */
export async function listDatasets(workspace: Workspace): Promise<DatasetSummary[]> {
  const root = datasetsRoot(workspace);
  const names = await fs.readdir(root).catch(() => [] as string[]);
  const out: DatasetSummary[] = [];
  for (const name of names.sort()) {
    if (name.startsWith(TMP_PREFIX)) {
      await sweepAbandoned(root, name);
      continue;
    }
    const dir = path.join(root, name);
    if (!(await fs.stat(dir).catch(() => null))?.isDirectory()) continue;
    try {
      const m = await readManifest(dir);
      let problem: string | null = null;
      await checkStructure(dir, m).catch((err: Error) => (problem = err.message));
      out.push(summarize(m, problem));
    } catch (err) {
      out.push({ id: name, name, records: 0, bytes: 0, shards: 0, fields: [], createdAt: '', sourceDescription: '', problem: (err as Error).message });
    }
  }
  return out;
}

/** Finds a cache by id, or by name (the newest of that name); E_BAD_INPUT lists what exists. */
export async function resolveDataset(workspace: Workspace, idOrName: string): Promise<{ dir: string; manifest: CacheManifest }> {
  const root = datasetsRoot(workspace);
  if (idOrName.includes('/') || idOrName.includes('\\') || idOrName.startsWith('.')) {
    throw new ApiError('E_BAD_INPUT', `dataset ${JSON.stringify(idOrName)} is not a dataset id or name`);
  }
  const direct = path.join(root, idOrName);
  if (await fs.stat(path.join(direct, 'manifest.json')).catch(() => null)) {
    const manifest = await readManifest(direct);
    await checkStructure(direct, manifest);
    return { dir: direct, manifest };
  }
  const all = (await listDatasets(workspace)).filter((d) => d.name === idOrName && d.problem === null);
  if (all.length === 0) {
    const known = (await listDatasets(workspace)).map((d) => d.id);
    throw new ApiError('E_BAD_INPUT', `no dataset ${JSON.stringify(idOrName)} in the workspace${known.length ? ` (have: ${known.join(', ')})` : ''}`);
  }
  all.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  const dir = path.join(root, all[0].id);
  return { dir, manifest: await readManifest(dir) };
}

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 8 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}


/** Full check: structure, then every shard's SHA-256 against the manifest; names each bad shard. */
export async function verifyDataset(workspace: Workspace, idOrName: string): Promise<{ id: string; ok: boolean; problems: string[]; seconds: number }> {
  const started = Date.now();
  const root = datasetsRoot(workspace);
  const dir = path.join(root, idOrName);
  const problems: string[] = [];
  let id = idOrName;
  try {
    const manifest = await readManifest(dir);
    id = manifest.id;
    await checkStructure(dir, manifest).catch((err: Error) => problems.push(err.message));
    for (const s of manifest.shards) {
      const actual = await sha256File(path.join(dir, s.file)).catch(() => null);
      if (actual === null) continue; // already reported as missing
      if (actual !== s.sha256) problems.push(`${s.file} is corrupted: its SHA-256 is ${actual.slice(0, 16)}… but the manifest says ${s.sha256.slice(0, 16)}…`);
    }
  } catch (err) {
    problems.push((err as Error).message);
  }
  return { id, ok: problems.length === 0, problems, seconds: (Date.now() - started) / 1000 };
}

export async function removeDataset(workspace: Workspace, id: string): Promise<void> {
  if (id.includes('/') || id.includes('\\') || id.startsWith('.') || id === '') throw new ApiError('E_BAD_INPUT', `${JSON.stringify(id)} is not a dataset id`);
  const dir = path.join(datasetsRoot(workspace), id);
  if (!(await fs.stat(dir).catch(() => null))) throw new ApiError('E_BAD_INPUT', `no dataset ${JSON.stringify(id)} in the workspace`);
  // Rename first so a half-removed cache never looks valid.
  const doomed = path.join(datasetsRoot(workspace), `${TMP_PREFIX}rm-${id}-${Date.now()}`);
  await fs.rename(dir, doomed);
  await fs.rm(doomed, { recursive: true, force: true });
}
