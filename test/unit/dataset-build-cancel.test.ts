// Re-attack 14 (issue 41, F2): a dataset build's cancel was answered taken while the build went on to publish,
// and the older caches of its name were removed though a person had pressed Cancel to keep them. A cancel is
// now either honoured (E_CANCELLED, the older caches kept) or, past the build's last check, answered not taken.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { type BuildProgress, BuildRequestSchema } from '../../src-main/api/datasets';
import { namesakes } from '../../src-main/core/datasets/cache-store';
import { DatasetService } from '../../src-main/core/datasets/dataset-service';
import { EventHub } from '../../src-main/core/common/event-hub';
import type { EngineClient } from '../../src-main/engine/engine-client';
import type { TelemetryService } from '../../src-main/core/telemetry/telemetry-service';
import { openWorkspace, type Workspace } from '../../src-main/core/workspace/workspace';
import { tempDir } from '../helpers/temp-dir';

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

async function service(): Promise<{ datasets: DatasetService; ws: Workspace; dir: string }> {
  const t = tempDir('trainbench-cancel-');
  cleanups.push(t.cleanup);
  const ws = await openWorkspace(t.dir);
  return { datasets: new DatasetService(ws, {} as EngineClient, new EventHub(), {} as TelemetryService), ws, dir: t.dir };
}

function csv(dir: string, name: string, rows: number, offset: number): string {
  const lines = ['a,b,label'];
  for (let i = 0; i < rows; i++) lines.push(`${i + offset},${i % 3},${i % 2}`);
  writeFileSync(path.join(dir, 'sources', name), lines.join('\n') + '\n');
  return `sources/${name}`;
}

const build = (datasets: DatasetService, file: string, jobId: string, onProgress?: (p: BuildProgress) => void) =>
  datasets.build(BuildRequestSchema.parse({ jobId, name: 'rows', source: { kind: 'csv', path: file, label: 'label' }, shardBytes: 4096 }), {}, onProgress);

describe('a dataset build’s cancel', () => {
  it('past the last check (publishing): answered not taken, and the build publishes what it said it would', async () => {
    const { datasets, ws, dir } = await service();
    const answers: { cancelled: boolean }[] = [];
    const result = await build(datasets, csv(dir, 'a.csv', 200, 0), 'job-publish', (p) => {
      if (p.phase === 'publishing') answers.push(datasets.cancel('job-publish'));
    });
    expect(answers).toEqual([{ cancelled: false }]);
    expect(result.hit).toBe(false);
    expect(await namesakes(ws, 'rows')).toEqual([result.dataset.id]);
  });

  it('before the last check: honoured, the older cache of the name kept, nothing new published', async () => {
    const { datasets, ws, dir } = await service();
    const first = await build(datasets, csv(dir, 'a.csv', 200, 0), 'job-first');
    const answers: { cancelled: boolean }[] = [];
    const second = build(datasets, csv(dir, 'b.csv', 300, 1000), 'job-second', (p) => {
      if (p.phase === 'reading' && answers.length === 0) answers.push(datasets.cancel('job-second'));
    });
    await expect(second).rejects.toMatchObject({ code: 'E_CANCELLED' });
    expect(answers).toEqual([{ cancelled: true }]);
    expect(await namesakes(ws, 'rows')).toEqual([first.dataset.id]);
  });

  it('a cache hit: a cancel that came first is honoured before the older caches of the name are retired', async () => {
    const { datasets, ws, dir } = await service();
    const a = csv(dir, 'a.csv', 200, 0);
    const first = await build(datasets, a, 'job-a');
    // Rebuilt from the same file: a hit. The cancel is sent before the build has looked for it.
    const again = build(datasets, a, 'job-hit');
    expect(datasets.cancel('job-hit')).toEqual({ cancelled: true });
    await expect(again).rejects.toMatchObject({ code: 'E_CANCELLED' });
    expect(await namesakes(ws, 'rows')).toEqual([first.dataset.id]);
  });
});
