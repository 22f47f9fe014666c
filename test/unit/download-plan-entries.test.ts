// A run's download lists its folders in bounded memory: a folder with more entries than a download lists is
// refused with its name, never zipped with the entries past the bound left out in silence.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DEFAULT_DOWNLOAD_LIMITS, planRun } from '../../src-main/core/downloads/download-plan';
import { openWorkspace, type Workspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

const t = tempDir();
const RUN = '20261205-070000-abc123';
let ws: Workspace;

beforeAll(async () => {
  ws = await openWorkspace(t.dir);
  const dir = path.join(t.dir, 'runs', RUN, 'samples');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(t.dir, 'runs', RUN, 'run.json'), '{}');
  for (let i = 0; i < 120; i++) writeFileSync(path.join(dir, `s${i}.bin`), 'x');
});
afterAll(() => t.cleanup());

describe('planRun on a folder with more entries than it lists', () => {
  it('refuses it, naming the folder and the bound', async () => {
    await expect(planRun(ws, RUN, { ...DEFAULT_DOWNLOAD_LIMITS, maxEntries: 100 })).rejects.toMatchObject({
      status: 413,
      message: `runs/${RUN}/samples holds more than 100 entries, more than a download lists: not downloaded`,
    });
  });

  it('plans every file when the folder is within the bound', async () => {
    const plan = await planRun(ws, RUN, { ...DEFAULT_DOWNLOAD_LIMITS, maxEntries: 120 });
    expect(plan.files).toHaveLength(121);
  });
});
