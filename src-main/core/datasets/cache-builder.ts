import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';

import type { z } from 'zod';

import type { BuildProgress, BuildResult, CacheDType, CacheManifest, HeldOutSplit, SourceSpec } from '../../api/datasets';
import { CACHE_FORMAT_VERSION, CacheFieldSchema, CacheManifestSchema, DTYPE_BYTES } from '../../api/datasets';
import { ApiError } from '../../api/errors';
import { issueWords } from '../../api/format-issues';
import { ID_PATTERN } from '../../api/ids';
import { WorkspaceFileError } from '../workspace/file-error';
import type { Workspace } from '../workspace/workspace';
import { createFile, makeFolder, makeFolderExclusive, removeEntry, renameEntry, worded, writeFileConfined, writeJsonConfined } from '../workspace/workspace-files';
import { checkStructure, DATASETS_DIR, datasetDir, datasetId, datasetsRoot, readManifest, namesakes, retireDatasets, scratchDir, sha256File, summarize, sweepAbandonedBuilds } from './cache-store';
import { convert, decode, StatsAccumulator } from './dtype-codec';
import { fingerprint } from './fingerprint';
import { excerpt } from './importers/excerpt';
import type { RecordSource } from './importers/record-source';
import { checkAborted, recordValues } from './importers/record-source';
import { planShards, recordsPerShard, shardHeader } from './shard-layout';
import { quotedText } from '../../api/shell-word';

export interface BuildSettings {
  name: string;
  shardBytes: number;
  fieldMap: { from: string; to: string; dtype: CacheDType }[];
}

export interface BuildOptions {
  jobId: string;
  onProgress?: (p: BuildProgress) => void;
  signal?: AbortSignal;
  /** The source as requested, stored in the manifest so the uncached path can reopen it. */
  spec?: SourceSpec;
  /** Which part of a held-out test split this cache holds (a heldOutPart source), recorded in the manifest. */
  split?: HeldOutSplit;
  /**
   * The build's last cancellation point, right before it publishes (or, on a hit, retires the older caches of its
   * name): from then on a cancel is answered not taken. Without it a cancel was answered taken while the build
   * went on to publish and removed the older caches a person had pressed Cancel to keep (re-attack 14).
   */
  closeToCancel?: () => void;
}

/** Records per chunk: about 8 MiB per chunk keeps memory bounded and the event loop responsive. */
function chunkRecords(bytesPerRecord: number): number {
  return Math.max(1, Math.floor((8 << 20) / bytesPerRecord));
}

interface OutField {
  name: string;
  classes?: string[];
  dtype: CacheDType;
  shape: number[];
  recordBytes: number;
  from: number;
  fromDtype: CacheDType;
}

function outputFields(source: RecordSource, fieldMap: BuildSettings['fieldMap']): OutField[] {
  for (const m of fieldMap) {
    if (!source.fields.some((f) => f.name === m.from)) {
      throw new ApiError('E_BAD_INPUT', `field map names '${m.from}', which the source does not have (it has: ${source.fields.map((f) => f.name).join(', ')})`);
    }
  }
  const out = source.fields.map((f, i) => {
    const m = fieldMap.find((x) => x.from === f.name);
    const dtype = m?.dtype ?? f.dtype;
    return { name: m?.to ?? f.name, classes: f.classes, dtype, shape: f.shape, recordBytes: recordValues(f) * DTYPE_BYTES[dtype], from: i, fromDtype: f.dtype };
  });
  const names = new Set<string>();
  for (const f of out) {
    // The manifest must stay valid whatever the field map or the source's own names say (the CLI skips the contract).
    if (!CacheFieldSchema.shape.name.safeParse(f.name).success) {
      const rule = 'field names are letters, digits, _ . - and start with a letter or _';
      const named = source.fields[f.from].name;
      // A name the source holds is fixed by renaming it in a field map, not by editing the file.
      const fix = fieldMap.some((m) => m.from === named) ? '' : `; rename the source's field with a field map (${quotedText(named, 64)} to another name)`;
      throw new ApiError('E_BAD_INPUT', `field name ${quotedText(f.name, 64)} is not allowed: ${rule}${fix}`);
    }
    if (names.has(f.name)) throw new ApiError('E_BAD_INPUT', `two fields would be named '${f.name}'`);
    names.add(f.name);
  }
  return out;
}

/** Names of manifest keys in messages. */
const KEY_WORDS: Record<string, string> = { records: 'the record count', recordsPerShard: 'records per shard', recordBytes: 'bytes per record' };

/** One zod issue of a manifest as words: "field 'x' dimension 2 (0) must be at least 1". */
function issueSentence(manifest: unknown, issue: z.core.$ZodIssue): string {
  let value: unknown = manifest;
  for (const key of issue.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[key];
  const [head, index, key, dim] = issue.path;
  const field = head === 'fields' && typeof index === 'number' ? (manifest as CacheManifest).fields[index] : undefined;
  const what =
    field && key === 'shape' && typeof dim === 'number'
      ? `field '${field.name}' dimension ${dim + 1}`
      : field
        ? `field '${field.name}' ${KEY_WORDS[String(key)] ?? String(key)}`
        : KEY_WORDS[String(head)] ?? issue.path.map(String).join('.');
  const shown = typeof value === 'number' || typeof value === 'string' ? ` (${excerpt(String(value))})` : '';
  const words =
    issue.code === 'too_big' && (issue as { origin?: string }).origin === 'int' ? `is more than the ${Number.MAX_SAFE_INTEGER} that can be counted exactly` : issueWords(issue);
  return `${what}${shown} ${words}`;
}

/**
 * Refuses (as the source's fault, in words) a manifest the reader would refuse: published, it would have replaced the
 * good cache of its name with one that never opens. Checked on the fields and counts before anything is written, and on
 * the whole manifest before it is published.
 */
function checkReadable(schema: z.ZodType, manifest: unknown, source: RecordSource, name: string): void {
  const parsed = schema.safeParse(manifest);
  if (parsed.success) return;
  const issues = parsed.error.issues;
  const more = issues.length > 3 ? `; and ${issues.length - 3} more` : '';
  throw new ApiError(
    'E_DATA',
    `${source.description} would make a cache that cannot be read (${issues.slice(0, 3).map((i) => issueSentence(manifest, i)).join('; ')}${more}): nothing was published, and any cache named '${name}' is kept`,
  );
}

/** The id a build of this source with these settings publishes, or finds: what buildCache names it. */
export async function plannedCacheId(source: RecordSource, settings: BuildSettings): Promise<string> {
  return datasetId(settings.name, (await fingerprint(source, settings)).hash);
}

/**
 * Builds a cache from a source into a temporary directory and publishes it
 * with one rename, so a cancelled or killed build never leaves a directory
 * that opens as valid. The same source and settings again is a cache hit.
 * A name means one cache: once this one is published (or found), the caches of
 * that name that existed when the build started are removed, so a rebuild from
 * another source replaces them.
 */
export async function buildCache(workspace: Workspace, source: RecordSource, settings: BuildSettings, options: BuildOptions): Promise<BuildResult> {
  const started = Date.now();
  // Checked here too: the CLI calls this without the contract, and the name becomes a folder name.
  if (!ID_PATTERN.test(settings.name)) {
    throw new ApiError('E_BAD_INPUT', `dataset name ${JSON.stringify(settings.name)} is not allowed: use letters, digits, '.', '_' and '-', not starting with '.'`);
  }
  const fields = outputFields(source, settings.fieldMap);
  const recordBytes = fields.map((f) => f.recordBytes);
  const perShard = recordsPerShard(settings.shardBytes, recordBytes);
  const manifestFields = (stats: ReturnType<StatsAccumulator['result']>[]) =>
    fields.map((f, i) => ({ name: f.name, dtype: f.dtype, shape: f.shape, recordBytes: f.recordBytes, stats: stats[i], ...(f.classes ? { classes: f.classes } : {}) }));
  checkReadable(
    CacheManifestSchema.pick({ records: true, recordsPerShard: true, fields: true }),
    { records: source.records, recordsPerShard: perShard, fields: manifestFields(fields.map(() => null)) },
    source,
    settings.name,
  );
  const fp = await fingerprint(source, settings);
  const id = datasetId(settings.name, fp.hash);
  await makeFolder(workspace, datasetsRoot(workspace));
  // Killed builds leave their scratch folders behind (gigabytes at times); reclaim them before adding one.
  await sweepAbandonedBuilds(workspace);
  const finalDir = datasetDir(workspace, id);
  const relativeDir = path.posix.join(DATASETS_DIR, id);
  const replaced = (await namesakes(workspace, settings.name)).filter((other) => other !== id);
  // A cancel before it is honoured; after it, none is taken (no await between the two).
  const lastCheck = () => {
    checkAborted(options.signal);
    options.closeToCancel?.();
  };
  const hit = async (manifest: CacheManifest): Promise<BuildResult> => {
    lastCheck();
    await retireDatasets(workspace, replaced);
    return { dataset: summarize(manifest, null), hit: true, seconds: (Date.now() - started) / 1000, dir: relativeDir };
  };

  const existing = await readManifest(workspace, finalDir).catch(() => null);
  if (existing) {
    const problem = await checkStructure(workspace, finalDir, existing).then(() => null, (err: Error) => err.message);
    if (problem === null) return hit(existing);
    throw new ApiError('E_DATA', `a cache ${id} exists but is damaged (${problem}); remove it with "trainbench cache rm ${id}" and build again`);
  }

  const tmp = scratchDir(workspace, id);
  await makeFolderExclusive(workspace, tmp).catch((err: unknown) => {
    throw namedAsTheCache(err, relativeDir);
  });
  try {
    // For older Trainbench versions sharing this workspace, whose sweep reads the owner from this file.
    await writeFileConfined(workspace, path.join(tmp, '.owner'), JSON.stringify({ pid: process.pid, startedAt: new Date().toISOString() }));
  } catch (err) {
    // On a full disk: its scratch folder goes (this process's own is never swept while it runs), and the error
    // names the cache, not the scratch file (a re-attack saw twenty left behind, each named .tmp-…/.owner).
    await removeEntry(workspace, tmp).catch(() => undefined);
    throw namedAsTheCache(err, relativeDir);
  }
  const plan = planShards(source.records, perShard, recordBytes);
  // Progress counts the record bytes written (headers and padding are not work).
  const bytesTotal = source.records * recordBytes.reduce((a, b) => a + b, 0);
  const stats = fields.map(() => new StatsAccumulator());
  let records = 0;
  let bytesWritten = 0;
  let lastEmit = 0;
  const emit = (phase: BuildProgress['phase'], force = false) => {
    const now = Date.now();
    if (!force && now - lastEmit < 100) return;
    lastEmit = now;
    const seconds = (now - started) / 1000;
    const rate = seconds > 0 ? bytesWritten / seconds : 0;
    options.onProgress?.({
      jobId: options.jobId,
      phase,
      records,
      recordsTotal: source.records,
      bytesWritten,
      bytesTotal,
      bytesPerSec: rate,
      etaSeconds: rate > 0 && phase === 'reading' ? (bytesTotal - bytesWritten) / rate : null,
    });
  };

  let fh: FileHandle | null = null;
  try {
    let shard = -1;
    const openShard = async (s: number) => {
      await (fh as FileHandle | null)?.close();
      const p = plan[s];
      fh = await createFile(workspace, path.join(tmp, p.file));
      await fh.truncate(p.bytes); // padding and gaps read as zeros
      await fh.write(shardHeader(s, p.records, fields.length), 0, 64, 0);
      shard = s;
    };
    const perChunk = chunkRecords(recordBytes.reduce((a, b) => a + b, 0));
    for await (const chunk of source.chunks(perChunk, options.signal)) {
      checkAborted(options.signal);
      const converted = fields.map((f) => convert(chunk.fields[f.from], f.fromDtype, f.dtype));
      converted.forEach((bytes, i) => stats[i].add(decode(bytes, fields[i].dtype)));
      // A chunk may straddle shards: write each part where it belongs.
      for (let done = 0; done < chunk.count; ) {
        const rec = records + done;
        const s = Math.floor(rec / perShard);
        if (s !== shard) await openShard(s);
        const local = rec - plan[s].firstRecord;
        const n = Math.min(chunk.count - done, plan[s].records - local);
        for (const [i, f] of fields.entries()) {
          const part = converted[i].subarray(done * f.recordBytes, (done + n) * f.recordBytes);
          await fh!.write(part, 0, part.length, plan[s].fieldOffsets[i] + local * f.recordBytes);
          bytesWritten += part.length;
        }
        done += n;
      }
      records += chunk.count;
      emit('reading');
    }
    await (fh as FileHandle | null)?.close();
    fh = null;
    if (records !== source.records) throw new ApiError('E_DATA', `${source.description} yielded ${records} records, expected ${source.records}`);

    emit('checksumming', true);
    const shards: CacheManifest['shards'] = [];
    for (const p of plan) {
      checkAborted(options.signal);
      shards.push({ file: p.file, records: p.records, bytes: p.bytes, fieldOffsets: p.fieldOffsets, sha256: await sha256File(workspace, path.join(tmp, p.file)) });
    }
    const manifest: CacheManifest & { source: { spec?: SourceSpec } } = {
      format: 'trainbench-cache',
      formatVersion: CACHE_FORMAT_VERSION,
      id,
      name: settings.name,
      createdAt: new Date().toISOString(),
      records,
      recordsPerShard: perShard,
      fields: manifestFields(stats.map((s) => s.result())),
      shards,
      source: {
        kind: source.kind,
        description: source.description,
        fingerprint: fp.hash,
        files: fp.files.map(({ path: p, bytes, mtimeMs }) => ({ path: p, bytes, mtimeMs })),
        spec: options.spec,
      },
      settings: { shardBytes: settings.shardBytes, fieldMap: settings.fieldMap },
      ...(options.split ? { split: options.split } : {}),
    };
    // As the reader will see it: JSON writes Infinity and NaN as null.
    checkReadable(CacheManifestSchema, JSON.parse(JSON.stringify(manifest)), source, settings.name);
    await writeJsonConfined(workspace, path.join(tmp, 'manifest.json'), manifest);
    await removeEntry(workspace, path.join(tmp, '.owner'));
    lastCheck();
    emit('publishing', true);
    try {
      await renameEntry(workspace, tmp, finalDir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST' && code !== 'ENOTEMPTY' && code !== 'EPERM') throw err;
      // Someone published the same cache meanwhile: theirs is as good as ours.
      await removeEntry(workspace, tmp);
      return hit(await readManifest(workspace, finalDir));
    }
    await retireDatasets(workspace, replaced);
    emit('done', true);
    return { dataset: summarize(manifest, null), hit: false, seconds: (Date.now() - started) / 1000, dir: relativeDir };
  } catch (err) {
    await (fh as FileHandle | null)?.close().catch(() => undefined);
    // A temp folder that cannot be removed (made immutable) is left: the build's own failure is the one to tell.
    await removeEntry(workspace, tmp).catch(() => undefined);
    throw namedAsTheCache(err, relativeDir); // a full disk: "datasets/<name> could not be written: no space left on the disk"
  }
}

/** A write's failure in the build named by the cache it was building, never by a scratch file or folder. */
function namedAsTheCache(err: unknown, relativeDir: string): unknown {
  if (err instanceof WorkspaceFileError && err.message.startsWith(err.file)) {
    return new WorkspaceFileError(err.problem, relativeDir, `${relativeDir}${err.message.slice(err.file.length)}`, err.code);
  }
  return worded(err, relativeDir);
}
