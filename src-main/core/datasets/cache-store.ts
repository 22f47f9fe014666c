import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';

import { printable } from '../../api/shell-word';
import type { CacheManifest, DatasetSummary, HeldOutSplit } from '../../api/datasets';
import { CACHE_FORMAT_VERSION, CacheManifestSchema } from '../../api/datasets';
import { ApiError } from '../../api/errors';
import { failureReason } from '../../api/fs-failures';
import { IdSchema } from '../../api/ids';
import { formatIssues } from '../../api/format-issues';
import type { Workspace } from '../workspace/workspace';
import { isFolder, isMissing, listFolder, MiB, openFile, readJsonCapped, readTextCapped, removeEntry, renameEntry, shownPath, streamFile } from '../workspace/workspace-files';
import { planShards, SHARD_HEADER_BYTES, SHARD_MAGIC } from './shard-layout';
import { processExists } from '../common/process-exists';
import { LIST_READS_AT_ONCE, mapAtOnce } from '../common/map-at-once';

/** A manifest lists fields and shards: even a terabyte cache's is far below this. */
const MAX_MANIFEST_BYTES = 16 * MiB;
/** A cache's shards and source files: a dataset of a folder of many files lists each (bounded by the bytes anyway). */
const MAX_MANIFEST_ARRAY_ENTRIES = 262_144;

export const DATASETS_DIR = 'datasets';
export const TMP_PREFIX = '.tmp-';

export function datasetsRoot(workspace: Workspace): string {
  return workspace.resolve(DATASETS_DIR);
}

/** Reads and validates manifest.json; E_DATA says exactly what is wrong. */
export async function readManifest(workspace: Workspace, dir: string): Promise<CacheManifest> {
  const file = path.join(dir, 'manifest.json');
  // Named relative to the workspace: the answer goes to a browser, and the workspace is copied between rigs.
  const shown = shownPath(workspace, path.resolve(workspace.root, file));
  let raw: unknown;
  try {
    raw = await readJsonCapped(workspace, file, MAX_MANIFEST_BYTES, MAX_MANIFEST_ARRAY_ENTRIES);
  } catch (err) {
    throw new ApiError('E_DATA', isMissing(err) ? `${shownPath(workspace, path.resolve(workspace.root, dir))} has no manifest.json` : (err as Error).message);
  }
  const version = (raw as { formatVersion?: unknown })?.formatVersion;
  if (typeof version === 'number' && version > CACHE_FORMAT_VERSION) {
    throw new ApiError('E_DATA', `${shown} was written by a newer Trainbench (cache format ${version}; this one reads ${CACHE_FORMAT_VERSION}): update Trainbench or rebuild the cache`);
  }
  const parsed = CacheManifestSchema.safeParse(raw);
  if (!parsed.success) throw new ApiError('E_DATA', `${shown} is not a valid cache manifest: ${formatIssues(parsed.error, 'manifest')}`);
  return parsed.data;
}

/** The checks done on every open: shard files exist with the right size and header (not the checksums). */
export async function checkStructure(workspace: Workspace, dir: string, m: CacheManifest): Promise<void> {
  // The layout follows from the records and fields: a manifest that says otherwise (a shard of 2 TiB for
  // a few records, say) is refused before any shard is opened or hashed. The count first, by arithmetic,
  // so a tampered record count cannot make the plan itself huge.
  if (Math.ceil(m.records / m.recordsPerShard) !== m.shards.length) {
    throw new ApiError('E_DATA', `the manifest lists ${m.shards.length} shards, but ${m.records} records at ${m.recordsPerShard} per shard make ${Math.ceil(m.records / m.recordsPerShard)}`);
  }
  const plan = planShards(m.records, m.recordsPerShard, m.fields.map((f) => f.recordBytes));
  for (const [i, s] of m.shards.entries()) {
    const p = plan[i];
    if (s.file !== p.file || s.records !== p.records || s.bytes !== p.bytes || s.fieldOffsets.join() !== p.fieldOffsets.join()) {
      throw new ApiError('E_DATA', `${s.file}: the manifest's size or offsets (${s.bytes} bytes) do not follow from its records and fields (${p.bytes} bytes expected)`);
    }
  }
  let total = 0;
  for (const [i, s] of m.shards.entries()) {
    // Opened as itself: a link or special file in a shard's place is refused, not mapped by the loader.
    const opened = await openFile(workspace, path.join(dir, s.file)).catch((err: unknown) => {
      throw new ApiError('E_DATA', isMissing(err) ? `${s.file} is missing from ${dir}` : (err as Error).message);
    });
    const fh = opened.handle;
    try {
      if (opened.size !== s.bytes) throw new ApiError('E_DATA', `${s.file} is ${opened.size} bytes but the manifest says ${s.bytes} (truncated or replaced)`);
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
    // Free text of manifest.json, which a tampered workspace may hold (the id is checked as one): escaped.
    name: printable(m.name),
    records: m.records,
    bytes: m.shards.reduce((a, s) => a + s.bytes, 0),
    shards: m.shards.length,
    fields: m.fields,
    createdAt: m.createdAt,
    sourceDescription: printable(m.source.description),
    problem,
    ...(m.split ? { split: m.split } : {}),
  };
}

/**
 * A fresh scratch folder under datasets/ for a build or a removal. The owner's pid
 * is in the name itself, so a sweep by another process can never mistake it for an
 * abandoned one in the moment before an .owner file would be written or after it is removed.
 */
export function scratchDir(workspace: Workspace, label: string): string {
  return path.join(datasetsRoot(workspace), `${TMP_PREFIX}${label}-${randomBytes(4).toString('hex')}.pid${process.pid}`);
}

async function ownerPid(workspace: Workspace, dir: string): Promise<number> {
  const named = /\.pid(\d+)$/.exec(path.basename(dir));
  if (named) return Number(named[1]);
  // Folders of older versions carry the pid in an .owner file; none means nobody owns it.
  const owner = await readTextCapped(workspace, path.join(dir, '.owner'), 4096).catch(() => null);
  try {
    return owner ? Number(JSON.parse(owner).pid) : NaN;
  } catch {
    return NaN;
  }
}

/**
 * Removes the scratch folders of builds and removals whose process is gone (killed or
 * crashed): never valid caches, and a killed build can leave gigabytes behind.
 */
export async function sweepAbandonedBuilds(workspace: Workspace): Promise<string[]> {
  const root = datasetsRoot(workspace);
  const names = (await listFolder(workspace, root).catch(() => [])).map((e) => e.name);
  const swept: string[] = [];
  for (const name of names.filter((n) => n.startsWith(TMP_PREFIX))) {
    const dir = path.join(root, name);
    const pid = await ownerPid(workspace, dir);
    if (Number.isInteger(pid) && pid > 0 && processExists(pid)) continue;
    // One that cannot be removed now (permissions, a file held open) is tried again next time.
    if (await removeEntry(workspace, dir).then(() => true, () => false)) swept.push(name);
  }
  return swept;
}

/** The folder of a cache id; refuses anything but one plain name inside datasets/, before any file is read. */
export function datasetDir(workspace: Workspace, idOrName: string): string {
  if (!IdSchema.safeParse(idOrName).success) {
    throw new ApiError(
      'E_BAD_INPUT',
      `${JSON.stringify(idOrName)} is not a dataset id or name: use letters, digits, '.', '_' and '-', not starting with '.' (see "trainbench cache list")`,
    );
  }
  return workspace.resolve(path.join(DATASETS_DIR, idOrName));
}

interface CacheEntry {
  id: string;
  dir: string;
  manifest: CacheManifest | null;
  /** Why the manifest could not be read, when it could not. */
  error: string | null;
}

/** Every folder under datasets/ but scratch ones (or those `only` picks by folder name), with its manifest when it reads. */
async function scanDatasets(workspace: Workspace, only: (dirName: string) => boolean = () => true): Promise<CacheEntry[]> {
  const root = datasetsRoot(workspace);
  const entries = await listFolder(workspace, root).catch(() => []);
  const out: CacheEntry[] = [];
  for (const entry of entries) {
    const name = entry.name;
    if (name.startsWith('.') || !only(name) || entry.kind === 'file') continue;
    const dir = path.join(root, name);
    if (entry.kind !== 'dir') {
      // A link or special file where a cache would be: listed with the problem, never followed.
      out.push({ id: name, dir, manifest: null, error: `${DATASETS_DIR}/${name} is ${entry.kind === 'link' ? 'a link' : 'a special file'}, not a cache folder: not read` });
      continue;
    }
    try {
      out.push({ id: name, dir, manifest: await readManifest(workspace, dir), error: null });
    } catch (err) {
      out.push({ id: name, dir, manifest: null, error: (err as Error).message });
    }
  }
  return out;
}

const ID_HASH_DIGITS = 12;

/** A cache's id: its name and the start of its source fingerprint (hex), so the same source and settings find it again. */
export function datasetId(name: string, fingerprintHex: string): string {
  return `${name}-${fingerprintHex.slice(0, ID_HASH_DIGITS)}`;
}

/** Whether a folder name can be the id of a cache named `name`, so a lookup by name reads only those manifests. */
function idOfName(name: string): (dirName: string) => boolean {
  const suffix = new RegExp(`^-[0-9a-f]{${ID_HASH_DIGITS}}$`);
  return (dirName) => dirName.startsWith(name) && suffix.test(dirName.slice(name.length));
}

/** Newest first: by creation time, then id, so every caller picks the same one of a name. */
function newestFirst(a: CacheEntry, b: CacheEntry): number {
  return (b.manifest?.createdAt ?? '').localeCompare(a.manifest?.createdAt ?? '') || b.id.localeCompare(a.id);
}

/** Every cache in the workspace with its state; unreadable ones are listed with the problem, never fatal. */
export async function listDatasets(workspace: Workspace): Promise<DatasetSummary[]> {
  await sweepAbandonedBuilds(workspace);
  return mapAtOnce(await scanDatasets(workspace), () => LIST_READS_AT_ONCE, async (e): Promise<DatasetSummary> => {
    if (e.manifest) {
      let problem: string | null = null;
      await checkStructure(workspace, e.dir, e.manifest).catch((err: Error) => (problem = err.message));
      return summarize(e.manifest, problem);
    }
    // Its folder name is all there is to show (control characters and all, from a planted folder): escaped.
    const id = printable(e.id);
    return { id, name: id, records: 0, bytes: 0, shards: 0, fields: [], createdAt: '', sourceDescription: '', problem: printable(e.error ?? '') || null };
  });
}

/**
 * Finds a cache's folder by id, or by name, without opening it. A name maps to one
 * cache since builds replace their namesakes; a workspace from an older version may
 * hold several of one name, and then the newest is the one meant.
 */
export async function locateDataset(workspace: Workspace, idOrName: string): Promise<{ id: string; dir: string }> {
  const direct = datasetDir(workspace, idOrName);
  if (await isFolder(workspace, direct)) return { id: idOrName, dir: direct };
  const named = (await scanDatasets(workspace, idOfName(idOrName))).filter((e) => e.manifest?.name === idOrName).sort(newestFirst);
  if (named.length > 0) return { id: named[0].id, dir: named[0].dir };
  const known = [...new Set((await scanDatasets(workspace)).map((e) => e.manifest?.name ?? e.id))];
  throw new ApiError(
    'E_BAD_INPUT',
    `no dataset named ${JSON.stringify(idOrName)} in this workspace${known.length ? ` (it has: ${known.join(', ')})` : ' (it has none yet: build one with "trainbench cache build")'}`,
  );
}

/** Finds and opens a cache by id or name: the structure is checked, E_DATA says what is wrong. */
export async function resolveDataset(workspace: Workspace, idOrName: string): Promise<{ dir: string; manifest: CacheManifest }> {
  const { dir } = await locateDataset(workspace, idOrName);
  const manifest = await readManifest(workspace, dir);
  await checkStructure(workspace, dir, manifest);
  return { dir, manifest };
}

/**
 * A training cache's held-out test split, as its import recorded it: the split and whether the test part's cache
 * is still in the workspace (`cache rm` may have removed it). Null when the cache was imported without one.
 */
export async function heldOutTestOf(workspace: Workspace, manifest: CacheManifest): Promise<{ split: HeldOutSplit; present: boolean } | null> {
  if (manifest.split?.part !== 'train') return null;
  const present = await isFolder(workspace, datasetDir(workspace, manifest.split.other));
  return { split: manifest.split, present };
}

/**
 * The held-out test parts (`<name>-test` caches that say so in their manifest) of an earlier import of `name`:
 * what an import of `name` without a split retires, so no test set is left holding rows the new cache trains on.
 */
export async function heldOutNamesakes(workspace: Workspace, testName: string): Promise<string[]> {
  return (await scanDatasets(workspace, idOfName(testName))).filter((e) => e.manifest?.name === testName && e.manifest.split?.part === 'test').map((e) => e.id);
}

/** Renames a cache away first so a half-removed cache never looks valid, then deletes it. */
async function discard(workspace: Workspace, id: string, dir: string): Promise<void> {
  const doomed = scratchDir(workspace, `rm-${id}`);
  try {
    await renameEntry(workspace, dir, doomed);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Windows refuses to move a folder while a process has one of its shards mapped.
    if (process.platform === 'win32' && (code === 'EPERM' || code === 'EBUSY' || code === 'EACCES')) {
      throw new ApiError('E_BAD_INPUT', `dataset ${id} is in use: stop the run or benchmark reading it, then remove it`);
    }
    // Elsewhere a mapped shard never stops a rename: the folder is immutable, read-only or a mount point.
    const why = failureReason(code);
    if (why) throw new ApiError('E_DATA', `dataset ${id} cannot be removed: ${why}`);
    throw err;
  }
  await removeEntry(workspace, doomed);
}

/** Ids of the caches named `name` now: what a build of that name will replace. */
export async function namesakes(workspace: Workspace, name: string): Promise<string[]> {
  return (await scanDatasets(workspace, idOfName(name))).filter((e) => e.manifest?.name === name).map((e) => e.id);
}

/**
 * Removes the caches a build replaced, listed by `namesakes` when the build started:
 * a cache published meanwhile by another build is not on that list, so two racing
 * builds of one name never delete each other's result (the newest wins by name).
 * Failing to remove one (a file held open on Windows) is not fatal: the name
 * already means the newest, and the next build of that name tries again.
 */
export async function retireDatasets(workspace: Workspace, ids: string[]): Promise<void> {
  for (const id of ids) {
    try {
      await discard(workspace, id, datasetDir(workspace, id));
    } catch {
      // left in place; see above
    }
  }
}

export async function sha256File(workspace: Workspace, file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of await streamFile(workspace, file, { highWaterMark: 8 * MiB })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Full check: structure, then every shard's SHA-256 against the manifest; names each bad shard. */
export async function verifyDataset(workspace: Workspace, idOrName: string): Promise<{ id: string; ok: boolean; problems: string[]; seconds: number }> {
  const started = Date.now();
  const located = await locateDataset(workspace, idOrName);
  const dir = located.dir;
  const problems: string[] = [];
  let id = located.id;
  try {
    const manifest = await readManifest(workspace, dir);
    id = manifest.id;
    await checkStructure(workspace, dir, manifest).catch((err: Error) => problems.push(err.message));
    // A damaged structure (a shard missing, of the wrong size, or a layout the manifest cannot have) is
    // the answer: hashing what is there would take as long as the files claim to be big.
    if (problems.length) return { id, ok: false, problems, seconds: (Date.now() - started) / 1000 };
    for (const s of manifest.shards) {
      const actual = await sha256File(workspace, path.join(dir, s.file)).catch(() => null);
      if (actual === null) continue; // already reported as missing
      if (actual !== s.sha256) problems.push(`${s.file} is corrupted: its SHA-256 is ${actual.slice(0, 16)}… but the manifest says ${s.sha256.slice(0, 16)}…`);
    }
  } catch (err) {
    problems.push((err as Error).message);
  }
  return { id, ok: problems.length === 0, problems, seconds: (Date.now() - started) / 1000 };
}

/** Removes a cache by id or name; returns the id removed. */
export async function removeDataset(workspace: Workspace, idOrName: string): Promise<string> {
  const { id, dir } = await locateDataset(workspace, idOrName);
  await discard(workspace, id, dir);
  return id;
}
