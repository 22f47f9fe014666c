import { createWriteStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';

import type { SourceSpec } from '../../api/datasets';
import type { Workspace } from '../workspace';
import { boardSource } from './importers/board-source';

export const EXAMPLE_TRAIN_RECORDS = 20_000;
export const EXAMPLE_TEST_RECORDS = 2_000;

/**
 * Writes board positions as headerless dumps named .npy (ndarray.tofile()),
 * the way the seeds' pipeline stores them, so the example exercises the same
 * raw importer and the uncached loader a real user's dumps would.
 */
export async function writeBoardDumps(workspace: Workspace, records: number, seed: number, signal?: AbortSignal): Promise<SourceSpec> {
  const dir = workspace.resolve(path.join('sources', `board-${records}-seed${seed}`));
  const files = { x: 'features.npy', policy: 'policy.npy', value: 'value.npy' };
  const spec: SourceSpec = {
    kind: 'raw',
    files: [
      { path: path.join(dir, files.x), field: 'x', dtype: 'uint8', shape: [104, 9, 9] },
      { path: path.join(dir, files.policy), field: 'policy', dtype: 'float16', shape: [1496] },
      { path: path.join(dir, files.value), field: 'value', dtype: 'float16', shape: [] },
    ],
  };
  const done = path.join(dir, '.complete');
  if (await fs.stat(done).catch(() => null)) return spec;
  await fs.mkdir(dir, { recursive: true });
  const source = boardSource(records, seed);
  const streams = source.fields.map((f) => createWriteStream(path.join(dir, files[f.name as keyof typeof files])));
  for await (const chunk of source.chunks(1024, signal)) {
    for (const [i, bytes] of chunk.fields.entries()) {
      if (!streams[i].write(bytes)) await once(streams[i], 'drain');
    }
  }
  await Promise.all(streams.map((s) => new Promise<void>((resolve, reject) => s.end((err?: Error | null) => (err ? reject(err) : resolve())))));
  // Marks the dumps as whole; an interrupted write is redone next time.
  await fs.writeFile(done, new Date().toISOString());
  return spec;
}
