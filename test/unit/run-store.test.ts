import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { parseRunRecord } from '../../src-main/api/run-record';
import { listRuns } from '../../src-main/core/workspace/run-reader';
import { createRun } from '../../src-main/core/workspace/run-store';
import type { Workspace } from '../../src-main/core/workspace/workspace';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let t: { dir: string; cleanup(): void };
let ws: Workspace;
beforeEach(async () => {
  t = tempDir();
  ws = await openWorkspace(t.dir);
});
afterEach(() => t.cleanup());

describe('run store', () => {
  it('records its owner and refreshes a heartbeat while live; the final record is never overwritten by a late beat', async () => {
    const run = await createRun(ws, 'train', { spec: { family: 'mlp' } }, { heartbeatMs: 20 });
    const read = () => {
      const parsed = parseRunRecord(readFileSync(path.join(run.dir, 'run.json'), 'utf8'));
      if (!parsed.record) throw new Error(parsed.problem);
      return parsed.record;
    };
    const first = read();
    expect(first).toMatchObject({ status: 'running', owner: { pid: process.pid, host: os.hostname(), startedAt: first.createdAt } });
    await sleep(150);
    const later = read();
    expect(Date.parse(later.heartbeatAt ?? '')).toBeGreaterThan(Date.parse(first.heartbeatAt ?? ''));
    expect((await listRuns(ws))[0]).toMatchObject({ id: run.id, status: 'running', interruption: null });

    await run.finish('completed', { result: { samplesPerSec: 5 } });
    await sleep(150);
    expect(read()).toMatchObject({ status: 'completed', result: { samplesPerSec: 5 } });
    expect((await listRuns(ws))[0]).toMatchObject({ status: 'completed', samplesPerSec: 5 });
  });
});
