// Re-attack 9: runs.list parsed every run.json whole, and hard links cost no disk: 400 links to one 4 MiB
// run.json made each list parse 1.6 GB (8 s, 650 MiB). One list reads at most its budget of run files; the
// runs past it are listed, unread, saying why, and the runs before it are listed as always.
import { linkSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import { LIST_RUN_JSON_BYTES, runReadBudget } from '../../src-main/core/workspace/run-file';
import { listRuns } from '../../src-main/core/workspace/run-reader';
import type { Workspace } from '../../src-main/core/workspace/workspace';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

const t = tempDir();
let ws: Workspace;
const KiB = 1024;
const ids = Array.from({ length: 6 }, (_, i) => `20261206-00000${i}-linked`);

beforeAll(async () => {
  ws = await openWorkspace(t.dir);
  // A real record, made 400 KiB by a long note in its config: each link to it is a whole run.json to parse.
  const record = { schemaVersion: RUN_SCHEMA_VERSION, id: ids[0], kind: 'train', status: 'completed', createdAt: '2026-12-06T00:00:00.000Z', config: { spec: { family: 'mlp' }, note: 'x'.repeat(400 * KiB) } };
  mkdirSync(path.join(t.dir, 'runs', ids[0]), { recursive: true });
  writeFileSync(path.join(t.dir, 'runs', ids[0], 'run.json'), JSON.stringify(record));
  for (const id of ids.slice(1)) {
    mkdirSync(path.join(t.dir, 'runs', id));
    linkSync(path.join(t.dir, 'runs', ids[0], 'run.json'), path.join(t.dir, 'runs', id, 'run.json'));
  }
});
afterAll(() => t.cleanup());

describe('runs.list reads a bounded amount of run files', () => {
  it('lists runs unread, saying why, once the list has read its budget', async () => {
    // A budget of 1 MiB: the first three reads (400 KiB each) use it, the other three are not read.
    const runs = await listRuns(ws, runReadBudget(1024 * KiB));
    expect(runs.map((r) => r.id)).toEqual([...ids].reverse());
    expect(runs.slice(0, 3).map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
    for (const r of runs.slice(3)) {
      expect(r.status).toBe('unreadable');
      expect(r.problem).toBe('not read: this list has read the 1 MiB of run files one list reads (a workspace of ordinary runs holds thousands within it)');
    }
  });

  it('reads them all within the default budget, which is far above any ordinary workspace', async () => {
    expect(LIST_RUN_JSON_BYTES).toBeGreaterThanOrEqual(256 * 1024 * KiB);
    expect((await listRuns(ws)).map((r) => r.status)).toEqual(ids.map(() => 'completed'));
  });
});
