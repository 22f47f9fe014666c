// Scratch folders of killed builds are reclaimed when the next build starts, not only by `cache list`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { datasetsRoot, scratchDir } from '../../src-main/core/datasets/cache-store';
import { cacheOf, testWorkspace } from '../helpers/datasets';

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  if (child.pid === undefined) throw new Error('could not start a child process');
  return child.pid;
}

function leftover(root: string, name: string, owner?: number): string {
  const dir = path.join(root, name);
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'shard-00000.bin'), new Uint8Array(1 << 20));
  if (owner !== undefined) writeFileSync(path.join(dir, '.owner'), JSON.stringify({ pid: owner, startedAt: new Date().toISOString() }));
  return dir;
}

describe('stale build folders', () => {
  it('a build sweeps those whose owner is gone, and keeps those of live processes', async () => {
    const t = await testWorkspace();
    cleanups.push(t.cleanup);
    const root = datasetsRoot(t.ws);
    const dead = deadPid();
    const oldFormatDead = leftover(root, '.tmp-big-0123abcd', dead);
    const newFormatDead = leftover(root, `.tmp-big-89abcdef.pid${dead}`);
    const ownerless = leftover(root, '.tmp-rm-gone-1700000000000');
    const oldFormatLive = leftover(root, '.tmp-running-0badf00d', process.pid);
    const newFormatLive = scratchDir(t.ws, 'running');
    mkdirSync(newFormatLive);

    const r = await cacheOf(t.ws, { kind: 'synthetic-board', records: 4, seed: 0 }, 'after-kill', 1 << 20);

    expect(r.hit).toBe(false);
    for (const gone of [oldFormatDead, newFormatDead, ownerless]) expect(existsSync(gone), gone).toBe(false);
    for (const kept of [oldFormatLive, newFormatLive]) expect(existsSync(kept), kept).toBe(true);
    expect(readdirSync(root).filter((n) => !n.startsWith('.'))).toEqual([r.dataset.id]);
  });

  it('a cache hit sweeps them too', async () => {
    const t = await testWorkspace();
    cleanups.push(t.cleanup);
    const spec = { kind: 'synthetic-board', records: 4, seed: 0 } as const;
    await cacheOf(t.ws, spec, 'hit', 1 << 20);
    const stale = leftover(datasetsRoot(t.ws), `.tmp-hit-00000000.pid${deadPid()}`);
    expect((await cacheOf(t.ws, spec, 'hit', 1 << 20)).hit).toBe(true);
    expect(existsSync(stale)).toBe(false);
  });
});
