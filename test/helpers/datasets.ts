import type { SourceSpec } from '../../src-main/api/datasets';
import { buildCache } from '../../src-main/core/datasets/cache-builder';
import { openSource } from '../../src-main/core/datasets/importers/open-source';
import { openWorkspace, type Workspace } from '../../src-main/core/workspace';
import { tempDir } from './temp-dir';

export async function testWorkspace(): Promise<{ ws: Workspace; dir: string; cleanup(): void }> {
  const t = tempDir('trainbench-ws-');
  return { ws: await openWorkspace(t.dir), dir: t.dir, cleanup: t.cleanup };
}

/** Builds a cache straight from a spec (no engine), with small shards so several are written. */
export async function cacheOf(ws: Workspace, spec: SourceSpec, name: string, shardBytes = 4096) {
  const source = await openSource(spec);
  return buildCache(ws, source, { name, shardBytes, fieldMap: [] }, { jobId: name, spec });
}
