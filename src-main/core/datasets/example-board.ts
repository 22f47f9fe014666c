import { randomBytes } from 'node:crypto';
import path from 'node:path';

import type { SourceSpec } from '../../api/datasets';
import type { Workspace } from '../workspace/workspace';
import { createFileWriteStream, isFolder, makeFolder, openFile, readTextCapped, removeEntry, renameEntry, writeFileConfined } from '../workspace/workspace-files';
import { boardSource } from './importers/board-source';
import { recordBytes } from './importers/record-source';

export const EXAMPLE_TRAIN_RECORDS = 20_000;
export const EXAMPLE_TEST_RECORDS = 2_000;

/**
 * Writes board positions as headerless dumps named .npy (ndarray.tofile()),
 * the way the seeds' pipeline stores them, so the example exercises the same
 * raw importer and the uncached loader a real user's dumps would.
 */
/**
 * Until a stream takes more (drain) or has ended (close; an error closes it too), with no listener left behind:
 * racing two events.once() promises left the loser's listeners on the stream at every wait.
 */
function drainOrClose(stream: NodeJS.EventEmitter): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

export async function writeBoardDumps(
  workspace: Workspace,
  records: number,
  seed: number,
  options: { signal?: AbortSignal; onProgress?: (recordsDone: number, bytesDone: number, bytesTotal: number) => void } = {},
): Promise<SourceSpec> {
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
  const complete = path.join(dir, '.complete');
  const source = boardSource(records, seed);
  if ((await isFolder(workspace, dir)) && (await readTextCapped(workspace, complete, 1024).then(() => true, () => false))) {
    // Finished before, if each dump is still a regular file of its exact size: a link or a file of
    // another size planted in a shared workspace is made again, never read.
    const whole = await Promise.all(
      source.fields.map((f) =>
        openFile(workspace, path.join(dir, files[f.name as keyof typeof files])).then(
          async (o) => {
            await o.handle.close();
            return o.size === records * recordBytes(f);
          },
          () => false,
        ),
      ),
    );
    if (whole.every(Boolean)) return spec;
  }
  await makeFolder(workspace, dir);
  // Written to fresh temp names and renamed into place: whatever was at the final names (a link
  // planted in a shared workspace, say) is replaced, never written through.
  const tag = randomBytes(4).toString('hex');
  const temps = source.fields.map((f) => path.join(dir, `.${files[f.name as keyof typeof files]}.${tag}.tmp`));
  const streams = temps.map((t) => createFileWriteStream(workspace, t));
  // A write error (a full disk) is kept and thrown from the loop; after a destroy, a pending write's error is expected.
  let writeError: Error | null = null;
  for (const s of streams) s.on('error', (err: Error) => (writeError ??= err));
  const bytesTotal = source.records * source.fields.reduce((a, f) => a + recordBytes(f), 0);
  let done = 0;
  let bytes = 0;
  // Generating runs the teacher network (~13 s for the example on 2 cores): say how far it is.
  try {
    for await (const chunk of source.chunks(1024, options.signal)) {
      for (const [i, part] of chunk.fields.entries()) {
        if (!streams[i].write(part)) await drainOrClose(streams[i]);
        if (writeError) throw writeError;
        bytes += part.length;
      }
      done += chunk.count;
      options.onProgress?.(done, bytes, bytesTotal);
    }
    await Promise.all(streams.map((s) => new Promise<void>((resolve, reject) => s.end((err?: Error | null) => (err ? reject(err) : resolve())))));
    if (writeError) throw writeError;
    for (const [i, f] of source.fields.entries()) await renameEntry(workspace, temps[i], path.join(dir, files[f.name as keyof typeof files]));
  } catch (err) {
    streams.forEach((s) => s.destroy());
    for (const t of temps) await removeEntry(workspace, t).catch(() => undefined);
    throw err;
  }
  // Marks the dumps as whole; an interrupted write is redone next time.
  await writeFileConfined(workspace, complete, new Date().toISOString());
  return spec;
}
