import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll } from 'vitest';

import type { SourceSpec } from '../../src-main/api/datasets';
import { buildCache } from '../../src-main/core/datasets/cache-builder';
import { openSource } from '../../src-main/core/datasets/importers/open-source';
import { openWorkspace, type Workspace } from '../../src-main/core/workspace/workspace';
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

/**
 * A workspace for one test file, created before its tests and removed after;
 * `file()` writes a source into its sources/ folder and returns the path.
 */
export function workspaceFixture() {
  const fx = {} as { ws: Workspace; dir: string; file(name: string, bytes: Uint8Array): string };
  let cleanup = () => undefined as void;
  beforeAll(async () => {
    const t = await testWorkspace();
    fx.ws = t.ws;
    fx.dir = t.dir;
    cleanup = t.cleanup;
  });
  afterAll(() => cleanup());
  fx.file = (name, bytes) => {
    const p = path.join(fx.dir, 'sources', name);
    writeFileSync(p, bytes);
    return p;
  };
  return fx;
}
