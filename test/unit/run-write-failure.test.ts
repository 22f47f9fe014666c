// Issue 41, re-attacks of F3 (2026-12-07): a write into a run's open file that failed after it was opened (a full
// disk, a file made immutable) emitted 'error' on a stream nobody listened to, and Node ended the process: serve
// mode with every job in it. The failure must reach the run, worded, and fail its job; the process goes on.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import { WorkspaceFileError } from '../../src-main/core/workspace/file-error';
import { createRun } from '../../src-main/core/workspace/run-store';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { createFileWriteStream, writeJsonConfined, writeNewFileConfined, writtenByAnotherProcess } from '../../src-main/core/workspace/workspace-files';
import { cacheOf } from '../helpers/datasets';
import { npyBytes } from '../helpers/numpy';
import { tempDir } from '../helpers/temp-dir';

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

/** A write error as the kernel gives it on a full disk (what a WriteStream emits when its write(2) fails). */
const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });

const runJson = (dir: string) => JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8')) as { status: string; error?: { code: string; message: string } };

describe('a write into an open workspace file that fails', () => {
  it('is handed to the stream’s owner, worded, and never emitted unheard', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const ws = await openWorkspace(t.dir);
    const seen: WorkspaceFileError[] = [];
    const stream = createFileWriteStream(ws, 'log.txt', { onError: (err) => seen.push(err) });
    stream.destroy(enospc());
    await new Promise<void>((resolve) => stream.on('close', () => resolve()));
    expect(seen.map((e) => [e.code, e.problem, e.message])).toEqual([['E_DATA', 'unwritable', 'log.txt could not be written: no space left on the disk']]);
    // Without an owner's listener the error is still heard: the process goes on (vitest fails a test on an unheard one).
    const alone = createFileWriteStream(ws, 'other.txt');
    alone.destroy(enospc());
    await new Promise<void>((resolve) => alone.on('close', () => resolve()));
  });

  it('fails the run: its next event is refused with it, and a completed run is recorded as failed', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const ws = await openWorkspace(t.dir);
    const run = await createRun(ws, 'train', { note: 'a run whose telemetry could not be written' });
    run.appendEvent({ type: 'step', step: 1 });
    const telemetry = run.stream('telemetry.jsonl', { append: true });
    telemetry.destroy(enospc());
    await new Promise<void>((resolve) => telemetry.on('close', () => resolve()));
    const message = `runs/${run.id}/telemetry.jsonl could not be written: no space left on the disk`;
    expect(() => run.appendEvent({ type: 'step', step: 2 })).toThrow(message);
    const finished = await run.finish('completed', { result: { steps: 2 } as never }).then(
      () => null,
      (e: ApiError) => e,
    );
    expect(finished).toBeInstanceOf(ApiError);
    expect(finished?.message).toBe(message);
    expect(runJson(run.dir)).toMatchObject({ status: 'failed', error: { code: 'E_DATA', message } });
  });

  for (const how of ['moved', 'removed'] as const) {
    it(`a run whose folder was ${how} while it ran is not called complete: its events went with the folder`, async () => {
      const t = tempDir();
      cleanups.push(t.cleanup);
      const ws = await openWorkspace(t.dir);
      const run = await createRun(ws, 'train', {});
      run.appendEvent({ type: 'step', step: 1 });
      if (how === 'moved') renameSync(run.dir, `${run.dir}-moved`);
      else rmSync(run.dir, { recursive: true });
      const message = `runs/${run.id} was removed or moved while the run wrote into it: its events and telemetry are not there`;
      await expect(run.finish('completed', {})).rejects.toThrow(message);
      expect((await run.fail(new ApiError('E_DATA', message))).message).toBe(message);
    });
  }

  // The real thing: a workspace on a 1 MiB tmpfs, filled while the run writes its events.
  const root = process.getuid?.() === 0;
  const mounted = (() => {
    if (!root) return null;
    const t = tempDir();
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', t.dir], { stdio: 'ignore' });
      return t;
    } catch {
      t.cleanup();
      return null;
    }
  })();
  it.skipIf(!mounted)(mounted ? 'on a disk that fills up: the run is refused with the disk named, the process goes on' : 'on a real full disk: skipped (needs root and tmpfs)', async () => {
    const dir = mounted!.dir;
    const outside = tempDir();
    cleanups.push(outside.cleanup);
    cleanups.push(() => {
      execFileSync('umount', [dir]);
      mounted!.cleanup();
    });
    mkdirSync(path.join(dir, 'ws'));
    const ws = await openWorkspace(path.join(dir, 'ws'));
    const run = await createRun(ws, 'train', {});
    const filler = path.join(dir, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(2 << 20)); // larger than the disk: fills it, then fails
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
    }
    const event = { type: 'step', pad: 'x'.repeat(16 << 10) };
    let refused: unknown = null;
    for (let i = 0; i < 200 && !refused; i++) {
      try {
        run.appendEvent(event);
      } catch (err) {
        refused = err;
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const worded = `runs/${run.id}/events.jsonl could not be written: no space left on the disk`;
    expect((refused as Error | null)?.message).toBe(worded);
    // The disk still full: run.json cannot be written either, and the first failure stays the answer, not a bare ENOSPC.
    await expect(run.finish('completed', {})).rejects.toThrow(worded);
    expect(await run.fail(refused)).toBe(refused);
    await expect(writeJsonConfined(ws, 'notes.json', { note: 'x'.repeat(64 << 10) })).rejects.toThrow('notes.json could not be written: no space left on the disk');
    // A new file (a model spec saved under a new name): its temp name never shown (second re-attack of issue 41).
    await expect(writeNewFileConfined(ws, 'fresh.json', 'x'.repeat(64 << 10))).rejects.toThrow('fresh.json could not be written: no space left on the disk');
    // A checkpoint copied in as the run ends (the engine saved it outside), and a dataset built, on the same full disk.
    await expect(writtenByAnotherProcess(ws, `runs/${run.id}/checkpoint.safetensors`, async (staged) => writeFileSync(staged, Buffer.alloc(256 << 10)))).rejects.toThrow(
      `runs/${run.id}/checkpoint.safetensors could not be written: no space left on the disk`,
    );
    const source = path.join(outside.dir, 'x.npy');
    writeFileSync(source, npyBytes('<f4', [4096, 16], new Uint8Array(4096 * 16 * 4).fill(1)));
    // Named by the cache, not by its scratch folder's files (.tmp-…/.owner), and the scratch folder gone with it.
    await expect(cacheOf(ws, { kind: 'npy', path: source, field: 'x' }, 'big')).rejects.toThrow(/^datasets\/big[^ /.]* could not be written: no space left on the disk$/);
    expect(readdirSync(path.join(ws.root, 'datasets')).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
    rmSync(filler); // room for run.json again: the failure is recorded
    await run.fail(refused);
    expect(runJson(run.dir)).toMatchObject({ status: 'failed', error: { code: 'E_DATA', message: worded } });
  });
});
